"""Prints crates/kernels/src/table.rs's `EXP2_TABLE`: 2^(j/128) for j = 0..127, each as
the nearest double `hi` and the nearest double `lo` to what remains, computed with Python's
`decimal` at 80 digits. Run: python3 crates/kernels/tools/exp2_table.py"""
import struct
from decimal import Decimal, getcontext

getcontext().prec = 80
N = 128
ln2 = Decimal(2).ln()


def bits(f):
    return struct.unpack("<Q", struct.pack("<d", f))[0]


for j in range(N):
    exact = (Decimal(j) / N * ln2).exp()
    hi = float(exact)
    lo = float(exact - Decimal(hi))
    print(f"    0x{bits(hi):016x}, 0x{bits(lo):016x}, // 2^({j}/128)")
