//! The kernels' constant tables, read by [`Arith::lookup`](crate::Arith::lookup): one
//! array of reals ([`TABLES`]), each table a range of it ([`Table`]), so that native code
//! reads every table from one data object of its module.

/// A table of reals that kernels read at an index they compute.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub enum Table {
    /// `2^(j/128)` for `j = 0..127`, as pairs `hi, lo`: `hi` the nearest double and `lo`
    /// the nearest double to `2^(j/128) - hi` (element `2j` is `hi`, `2j + 1` is `lo`).
    Exp2,
}

impl Table {
    /// The index of the table's first element in [`TABLES`].
    #[inline(always)]
    pub const fn start(self) -> usize {
        match self {
            Table::Exp2 => 0,
        }
    }

    /// How many rows the table has: a power of two, so that a row index is reduced to
    /// the table by a mask.
    #[inline(always)]
    pub const fn rows(self) -> usize {
        match self {
            Table::Exp2 => EXP2_N,
        }
    }

    /// How many reals each row holds: a power of two.
    #[inline(always)]
    pub const fn width(self) -> usize {
        match self {
            Table::Exp2 => 2,
        }
    }

    /// The real at `column` of row `i mod rows`: what [`Arith::lookup`](crate::Arith::lookup)
    /// computes.
    #[inline(always)]
    pub fn get(self, i: i64, column: usize) -> f64 {
        assert!(column < self.width(), "a column of the table");
        let row = (i as usize) & (self.rows() - 1);
        f64::from_bits(TABLES[self.start() + row * self.width() + column])
    }
}

/// How many powers [`Table::Exp2`] holds.
pub(crate) const EXP2_N: usize = 128;

/// Every table, one after the other, as the bits of its reals: what native code reads.
pub static TABLES: [u64; 2 * EXP2_N] = EXP2_TABLE;

/// [`Table::Exp2`]'s bits, printed by `crates/kernels/tools/exp2_table.py` (Python's
/// `decimal` at 80 digits); `tests/accuracy.rs` checks them against astro-float.
const EXP2_TABLE: [u64; 2 * EXP2_N] = [
    0x3ff0000000000000,
    0x0000000000000000, // 2^(0/128)
    0x3ff0163da9fb3335,
    0x3c9b61299ab8cdb7, // 2^(1/128)
    0x3ff02c9a3e778061,
    0xbc719083535b085d, // 2^(2/128)
    0x3ff04315e86e7f85,
    0xbc90a31c1977c96e, // 2^(3/128)
    0x3ff059b0d3158574,
    0x3c8d73e2a475b465, // 2^(4/128)
    0x3ff0706b29ddf6de,
    0xbc8c91dfe2b13c27, // 2^(5/128)
    0x3ff0874518759bc8,
    0x3c6186be4bb284ff, // 2^(6/128)
    0x3ff09e3ecac6f383,
    0x3c91487818316136, // 2^(7/128)
    0x3ff0b5586cf9890f,
    0x3c98a62e4adc610b, // 2^(8/128)
    0x3ff0cc922b7247f7,
    0x3c901edc16e24f71, // 2^(9/128)
    0x3ff0e3ec32d3d1a2,
    0x3c403a1727c57b53, // 2^(10/128)
    0x3ff0fb66affed31b,
    0xbc6b9bedc44ebd7b, // 2^(11/128)
    0x3ff11301d0125b51,
    0xbc96c51039449b3a, // 2^(12/128)
    0x3ff12abdc06c31cc,
    0xbc51b514b36ca5c7, // 2^(13/128)
    0x3ff1429aaea92de0,
    0xbc932fbf9af1369e, // 2^(14/128)
    0x3ff15a98c8a58e51,
    0x3c82406ab9eeab0a, // 2^(15/128)
    0x3ff172b83c7d517b,
    0xbc819041b9d78a76, // 2^(16/128)
    0x3ff18af9388c8dea,
    0xbc911023d1970f6c, // 2^(17/128)
    0x3ff1a35beb6fcb75,
    0x3c8e5b4c7b4968e4, // 2^(18/128)
    0x3ff1bbe084045cd4,
    0xbc995386352ef607, // 2^(19/128)
    0x3ff1d4873168b9aa,
    0x3c9e016e00a2643c, // 2^(20/128)
    0x3ff1ed5022fcd91d,
    0xbc91df98027bb78c, // 2^(21/128)
    0x3ff2063b88628cd6,
    0x3c8dc775814a8495, // 2^(22/128)
    0x3ff21f49917ddc96,
    0x3c82a97e9494a5ee, // 2^(23/128)
    0x3ff2387a6e756238,
    0x3c99b07eb6c70573, // 2^(24/128)
    0x3ff251ce4fb2a63f,
    0x3c8ac155bef4f4a4, // 2^(25/128)
    0x3ff26b4565e27cdd,
    0x3c82bd339940e9d9, // 2^(26/128)
    0x3ff284dfe1f56381,
    0xbc9a4c3a8c3f0d7e, // 2^(27/128)
    0x3ff29e9df51fdee1,
    0x3c8612e8afad1255, // 2^(28/128)
    0x3ff2b87fd0dad990,
    0xbc410adcd6381aa4, // 2^(29/128)
    0x3ff2d285a6e4030b,
    0x3c90024754db41d5, // 2^(30/128)
    0x3ff2ecafa93e2f56,
    0x3c71ca0f45d52383, // 2^(31/128)
    0x3ff306fe0a31b715,
    0x3c86f46ad23182e4, // 2^(32/128)
    0x3ff32170fc4cd831,
    0x3c8a9ce78e18047c, // 2^(33/128)
    0x3ff33c08b26416ff,
    0x3c932721843659a6, // 2^(34/128)
    0x3ff356c55f929ff1,
    0xbc8b5cee5c4e4628, // 2^(35/128)
    0x3ff371a7373aa9cb,
    0xbc963aeabf42eae2, // 2^(36/128)
    0x3ff38cae6d05d866,
    0xbc9e958d3c9904bd, // 2^(37/128)
    0x3ff3a7db34e59ff7,
    0xbc75e436d661f5e3, // 2^(38/128)
    0x3ff3c32dc313a8e5,
    0xbc9efff8375d29c3, // 2^(39/128)
    0x3ff3dea64c123422,
    0x3c8ada0911f09ebc, // 2^(40/128)
    0x3ff3fa4504ac801c,
    0xbc97d023f956f9f3, // 2^(41/128)
    0x3ff4160a21f72e2a,
    0xbc5ef3691c309278, // 2^(42/128)
    0x3ff431f5d950a897,
    0xbc81c7dde35f7999, // 2^(43/128)
    0x3ff44e086061892d,
    0x3c489b7a04ef80d0, // 2^(44/128)
    0x3ff46a41ed1d0057,
    0x3c9c944bd1648a76, // 2^(45/128)
    0x3ff486a2b5c13cd0,
    0x3c73c1a3b69062f0, // 2^(46/128)
    0x3ff4a32af0d7d3de,
    0x3c99cb62f3d1be56, // 2^(47/128)
    0x3ff4bfdad5362a27,
    0x3c7d4397afec42e2, // 2^(48/128)
    0x3ff4dcb299fddd0d,
    0x3c98ecdbbc6a7833, // 2^(49/128)
    0x3ff4f9b2769d2ca7,
    0xbc94b309d25957e3, // 2^(50/128)
    0x3ff516daa2cf6642,
    0xbc8f768569bd93ef, // 2^(51/128)
    0x3ff5342b569d4f82,
    0xbc807abe1db13cad, // 2^(52/128)
    0x3ff551a4ca5d920f,
    0xbc8d689cefede59b, // 2^(53/128)
    0x3ff56f4736b527da,
    0x3c99bb2c011d93ad, // 2^(54/128)
    0x3ff58d12d497c7fd,
    0x3c8295e15b9a1de8, // 2^(55/128)
    0x3ff5ab07dd485429,
    0x3c96324c054647ad, // 2^(56/128)
    0x3ff5c9268a5946b7,
    0x3c3c4b1b816986a2, // 2^(57/128)
    0x3ff5e76f15ad2148,
    0x3c9ba6f93080e65e, // 2^(58/128)
    0x3ff605e1b976dc09,
    0xbc93e2429b56de47, // 2^(59/128)
    0x3ff6247eb03a5585,
    0xbc9383c17e40b497, // 2^(60/128)
    0x3ff6434634ccc320,
    0xbc8c483c759d8933, // 2^(61/128)
    0x3ff6623882552225,
    0xbc9bb60987591c34, // 2^(62/128)
    0x3ff68155d44ca973,
    0x3c6038ae44f73e65, // 2^(63/128)
    0x3ff6a09e667f3bcd,
    0xbc9bdd3413b26456, // 2^(64/128)
    0x3ff6c012750bdabf,
    0xbc72895667ff0b0d, // 2^(65/128)
    0x3ff6dfb23c651a2f,
    0xbc6bbe3a683c88ab, // 2^(66/128)
    0x3ff6ff7df9519484,
    0xbc883c0f25860ef6, // 2^(67/128)
    0x3ff71f75e8ec5f74,
    0xbc816e4786887a99, // 2^(68/128)
    0x3ff73f9a48a58174,
    0xbc90a8d96c65d53c, // 2^(69/128)
    0x3ff75feb564267c9,
    0xbc90245957316dd3, // 2^(70/128)
    0x3ff780694fde5d3f,
    0x3c9866b80a02162d, // 2^(71/128)
    0x3ff7a11473eb0187,
    0xbc841577ee04992f, // 2^(72/128)
    0x3ff7c1ed0130c132,
    0x3c9f124cd1164dd6, // 2^(73/128)
    0x3ff7e2f336cf4e62,
    0x3c705d02ba15797e, // 2^(74/128)
    0x3ff80427543e1a12,
    0xbc927c86626d972b, // 2^(75/128)
    0x3ff82589994cce13,
    0xbc9d4c1dd41532d8, // 2^(76/128)
    0x3ff8471a4623c7ad,
    0xbc88d684a341cdfb, // 2^(77/128)
    0x3ff868d99b4492ed,
    0xbc9fc6f89bd4f6ba, // 2^(78/128)
    0x3ff88ac7d98a6699,
    0x3c9994c2f37cb53a, // 2^(79/128)
    0x3ff8ace5422aa0db,
    0x3c96e9f156864b27, // 2^(80/128)
    0x3ff8cf3216b5448c,
    0xbc70d55e32e9e3aa, // 2^(81/128)
    0x3ff8f1ae99157736,
    0x3c85cc13a2e3976c, // 2^(82/128)
    0x3ff9145b0b91ffc6,
    0xbc9dd6792e582524, // 2^(83/128)
    0x3ff93737b0cdc5e5,
    0xbc675fc781b57ebc, // 2^(84/128)
    0x3ff95a44cbc8520f,
    0xbc764b7c96a5f039, // 2^(85/128)
    0x3ff97d829fde4e50,
    0xbc9d185b7c1b85d1, // 2^(86/128)
    0x3ff9a0f170ca07ba,
    0xbc9173bd91cee632, // 2^(87/128)
    0x3ff9c49182a3f090,
    0x3c7c7c46b071f2be, // 2^(88/128)
    0x3ff9e86319e32323,
    0x3c7824ca78e64c6e, // 2^(89/128)
    0x3ffa0c667b5de565,
    0xbc9359495d1cd533, // 2^(90/128)
    0x3ffa309bec4a2d33,
    0x3c96305c7ddc36ab, // 2^(91/128)
    0x3ffa5503b23e255d,
    0xbc9d2f6edb8d41e1, // 2^(92/128)
    0x3ffa799e1330b358,
    0x3c9bcb7ecac563c7, // 2^(93/128)
    0x3ffa9e6b5579fdbf,
    0x3c90fac90ef7fd31, // 2^(94/128)
    0x3ffac36bbfd3f37a,
    0xbc8f9234cae76cd0, // 2^(95/128)
    0x3ffae89f995ad3ad,
    0x3c97a1cd345dcc81, // 2^(96/128)
    0x3ffb0e07298db666,
    0xbc9bdef54c80e425, // 2^(97/128)
    0x3ffb33a2b84f15fb,
    0xbc62805e3084d708, // 2^(98/128)
    0x3ffb59728de5593a,
    0xbc9c71dfbbba6de3, // 2^(99/128)
    0x3ffb7f76f2fb5e47,
    0xbc75584f7e54ac3b, // 2^(100/128)
    0x3ffba5b030a1064a,
    0xbc9efcd30e54292e, // 2^(101/128)
    0x3ffbcc1e904bc1d2,
    0x3c823dd07a2d9e84, // 2^(102/128)
    0x3ffbf2c25bd71e09,
    0xbc9efdca3f6b9c73, // 2^(103/128)
    0x3ffc199bdd85529c,
    0x3c811065895048dd, // 2^(104/128)
    0x3ffc40ab5fffd07a,
    0x3c9b4537e083c60a, // 2^(105/128)
    0x3ffc67f12e57d14b,
    0x3c92884dff483cad, // 2^(106/128)
    0x3ffc8f6d9406e7b5,
    0x3c71acbc48805c44, // 2^(107/128)
    0x3ffcb720dcef9069,
    0x3c7503cbd1e949db, // 2^(108/128)
    0x3ffcdf0b555dc3fa,
    0xbc8dd83b53829d72, // 2^(109/128)
    0x3ffd072d4a07897c,
    0xbc9cbc3743797a9c, // 2^(110/128)
    0x3ffd2f87080d89f2,
    0xbc9d487b719d8578, // 2^(111/128)
    0x3ffd5818dcfba487,
    0x3c82ed02d75b3707, // 2^(112/128)
    0x3ffd80e316c98398,
    0xbc911ec18beddfe8, // 2^(113/128)
    0x3ffda9e603db3285,
    0x3c9c2300696db532, // 2^(114/128)
    0x3ffdd321f301b460,
    0x3c92da5778f018c3, // 2^(115/128)
    0x3ffdfc97337b9b5f,
    0xbc91a5cd4f184b5c, // 2^(116/128)
    0x3ffe264614f5a129,
    0xbc97b627817a1496, // 2^(117/128)
    0x3ffe502ee78b3ff6,
    0x3c839e8980a9cc8f, // 2^(118/128)
    0x3ffe7a51fbc74c83,
    0x3c92d522ca0c8de2, // 2^(119/128)
    0x3ffea4afa2a490da,
    0xbc9e9c23179c2893, // 2^(120/128)
    0x3ffecf482d8e67f1,
    0xbc9c93f3b411ad8c, // 2^(121/128)
    0x3ffefa1bee615a27,
    0x3c9dc7f486a4b6b0, // 2^(122/128)
    0x3fff252b376bba97,
    0x3c93a1a5bf0d8e43, // 2^(123/128)
    0x3fff50765b6e4540,
    0x3c99d3e12dd8a18b, // 2^(124/128)
    0x3fff7bfdad9cbe14,
    0xbc9dbb12d006350a, // 2^(125/128)
    0x3fffa7c1819e90d8,
    0x3c874853f3a5931e, // 2^(126/128)
    0x3fffd3c22b8f71f1,
    0x3c62eb74966579e7, // 2^(127/128)
];
