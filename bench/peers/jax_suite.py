"""The programs of unfad's performance suite (``src/suite.rs``) written plainly in JAX, timed
for perf-report's JAX column (issue 18).

    python bench/peers/jax_suite.py DIR

``DIR/request.json`` (written by perf-report) names the programs, their sizes and their
inputs, each argument a raw file of little-endian float64 in ``DIR`` (row-major; a real is
a file of one element, of shape ``[]``), and the time budget::

    {"rounds": 15, "sample_seconds": 0.004, "max_seconds": 20,
     "programs": [{"id": "p3", "name": "dot", "size": {"n": 1000000, "m": 0, "k": 0},
                   "args": [{"file": "p3.arg0.bin", "shape": [1000000]}, ...]}, ...]}

Each program runs in float64 (``jax_enable_x64``) as ``jax.jit(f)`` (the primal) and
``jax.jit(jax.value_and_grad(f, argnums=<every parameter>))`` (unfad's suite differentiates
every parameter), compiled and run once before timing. The two are sampled in turn, as the
Rust side samples its variants: each sample is a batch of calls lasting at least
``sample_seconds`` (the count found by doubling from one call), every call waited for with
``block_until_ready``; a time is the median over the rounds (fewer rounds, at least 3, when a
call is so slow that the rounds would take longer than ``max_seconds``).

The Hessian-vector product (issue 21) is sampled in the same rounds:
``jax.jit`` of ``jax.jvp(jax.grad(f, argnums=<every parameter>), args, direction)``'s
tangent (forward over reverse, as unfad's ``compile_hvp``), in the direction whose files the
request names beside each argument (``"direction"``; the same shapes), written by
perf-report so that both sides use the same one.

The answer, printed on stdout as one JSON object: the versions (``jax``, ``jaxlib``,
``numpy``, Python, the device and the cores XLA may use), and per point (its ``id`` and
``name``; a program may come at several sizes) its value, its primal's value, the
nanoseconds per call of the primal and of value-and-gradient, the rounds, and the files
(in ``DIR``) holding the gradient with respect to each parameter, flat, as float64; or
``error`` for a program that failed. Then ``hvp_ns`` and ``hvps`` (the files of the
Hessian-vector product's block for each parameter), or ``hvp_error`` when it failed alone. Without JAX the answer is ``{"absent": why}``.
perf-report checks the values and gradients against unfad's before it shows a time.
"""

import json
import os
import platform
import sys
import time


def programs(jnp, lax, nn):
    """Every program of the suite by its name in ``src/suite.rs``, in the order of its
    parameters there."""

    def intro(x1, x2, x3):
        w1 = x1 * x2
        return w1 * x1

    def scalar(x, y, z):
        a = jnp.sin(x) * y
        b = jnp.exp(a - z)
        return jnp.log(1 + b * b) + a * z / (1 + x * x)

    def total(a):
        return jnp.sum(a)

    def dot(a, b):
        return jnp.dot(a, b)

    def prod(a):
        return jnp.prod(a)

    def logsumexp(x):
        m = jnp.max(x)
        return m + jnp.log(jnp.sum(jnp.exp(x - m)))

    def sumexpsin(a, b):
        return jnp.sum(jnp.exp(a) * jnp.sin(b))

    def leastsq(a, b, w):
        return jnp.sum((w * a - b) ** 2)

    def recurrence(xs, w, u, h0):
        def step(h, x):
            return jnp.tanh(w * h + u * x), None

        h, _ = lax.scan(step, h0, xs)
        return h * h

    def matvec_sq(m, x):
        d = m @ x
        return jnp.sum(d * d)

    def neural_layer(w, b, x, t):
        h = jnp.tanh(w @ x + b)
        return jnp.sum((h - t) ** 2)

    def row_lse(m):
        mx = jnp.max(m, axis=1, keepdims=True)
        return jnp.sum(mx[:, 0] + jnp.log(jnp.sum(jnp.exp(m - mx), axis=1)))

    def mlp_tanh(x, w1, b1, w2, y):
        h = jnp.tanh(x @ w1.T + b1)
        out = h @ w2
        return jnp.sum((out - y) ** 2)

    def mlp_mean(x, t, w1, b1, w2, b2):
        h = jnp.maximum(0.0, x @ w1.T + b1)
        out = jnp.tanh(h @ w2 + b2)
        return jnp.sum((out - t) ** 2) / x.shape[0]

    def softmax_ce(x, w, y):
        z = x @ w.T
        lse = jnp.log(jnp.sum(jnp.exp(z), axis=1, keepdims=True))
        return jnp.sum(y * (lse - z))

    def gmm_plain(alpha, means, q, x):
        z = x[:, None, :] - means[None, :, :]
        s = jnp.exp(q)[None, :, :] * z
        comps = alpha + jnp.sum(q, axis=1) - 0.5 * jnp.sum(s * s, axis=2)
        mx = jnp.max(comps, axis=1, keepdims=True)
        return jnp.sum(mx[:, 0] + jnp.log(jnp.sum(jnp.exp(comps - mx), axis=1)))

    def matvec_tanh(w, x):
        return jnp.sum(jnp.tanh(w @ x))

    def rnn_captured(xs, w, a, c, y):
        def step(h, x):
            return jnp.tanh(a * h + jnp.dot(w, x) + c), None

        h, _ = lax.scan(step, jnp.zeros((), xs.dtype), xs)
        return (h - y) * (h - y)

    def batch_recurrence(xs, y, a, c):
        # Every row's recurrence at once: a scan over the columns of the batch.
        def step(h, x):
            return jnp.tanh(a * h + x + c), None

        h, _ = lax.scan(step, jnp.zeros(xs.shape[0], xs.dtype), xs.T)
        return jnp.sum((h - y) * (h - y))

    def rnn_layer(w, u, b, h0, xs):
        def step(h, x):
            return jnp.tanh(w @ h + u @ x + b), None

        h, _ = lax.scan(step, h0, xs)
        return jnp.sum(h * h)

    def least_squares(a, x, b):
        r = a @ x - b
        return jnp.dot(r, r)

    def row_logsumexp(m):
        return jnp.sum(jnp.log(jnp.sum(jnp.exp(m), axis=1)))

    def smoothing(x, y, lam):
        fit = jnp.sum((x - y) ** 2)
        diffs = x[1:] - x[:-1]
        return fit + lam * jnp.sum(diffs * diffs)

    def column_stats(x):
        mean = jnp.mean(x, axis=0)
        var = jnp.mean((x - mean) ** 2, axis=0)
        return jnp.sum(jnp.log(var + 1))

    def total_variation(x, y, lam):
        d = x[1:] - x[:-1]
        return jnp.sum((x - y) ** 2) + lam * jnp.sum(jnp.sqrt(d * d + 1e-6))

    def second_difference(x):
        t = x[:-2] - 2 * x[1:-1] + x[2:]
        return jnp.sum(t * t)

    def huber(pred, y, delta):
        r = pred - y
        a = jnp.abs(r)
        return jnp.sum(jnp.where(a <= delta, 0.5 * r * r, delta * (a - 0.5 * delta)))

    def logistic(x, w, b, y):
        p = nn.sigmoid(x @ w + b)
        return -jnp.sum(y * jnp.log(p) + (1 - y) * jnp.log(1 - p))

    def matmul_fit(a, b, c):
        r = a @ b - c
        return jnp.sum(r * r)

    def conv1d(x, w):
        # A sum of shifted windows (jnp.convolve in float64 crashes XLA's CPU backend here).
        k = w.shape[0]
        m = x.shape[0] - k + 1
        y = sum(w[j] * x[j : j + m] for j in range(k))
        return jnp.sum(y * y)

    def rosenbrock(x):
        a = x[1:] - x[:-1] * x[:-1]
        b = 1 - x[:-1]
        return jnp.sum(100 * a * a + b * b)

    def gauss_nll(x, mu, sig):
        return jnp.sum(jnp.log(sig) + (x - mu) * (x - mu) / (2 * sig * sig))

    return {
        "intro": intro,
        "scalar": scalar,
        "sum": total,
        "dot": dot,
        "prod": prod,
        "logsumexp": logsumexp,
        "sumexpsin": sumexpsin,
        "leastsq": leastsq,
        "recurrence": recurrence,
        "matvec_sq": matvec_sq,
        "neural_layer": neural_layer,
        "row_lse": row_lse,
        "mlp_tanh": mlp_tanh,
        "mlp_mean": mlp_mean,
        "softmax_ce": softmax_ce,
        "gmm_plain": gmm_plain,
        "matvec_tanh": matvec_tanh,
        "rnn_captured": rnn_captured,
        "batch_recurrence": batch_recurrence,
        "rnn_layer": rnn_layer,
        "least_squares": least_squares,
        "row_logsumexp": row_logsumexp,
        "smoothing": smoothing,
        "column_stats": column_stats,
        "total_variation": total_variation,
        "second_difference": second_difference,
        "huber": huber,
        "logistic": logistic,
        "matmul_fit": matmul_fit,
        "conv1d": conv1d,
        "rosenbrock": rosenbrock,
        "gauss_nll": gauss_nll,
    }


def calls_per_sample(call, seconds):
    """Calls of ``call`` in a batch lasting at least ``seconds``, and the time of one call."""
    calls = 1
    while True:
        start = time.perf_counter()
        for _ in range(calls):
            call()
        elapsed = time.perf_counter() - start
        if elapsed >= seconds or calls >= 1 << 24:
            return calls, elapsed / calls
        grow = 16.0 if elapsed <= 0 else min(16.0, max(1.5, seconds / elapsed * 1.2))
        calls = int(calls * grow + 0.999)


def median(xs):
    v = sorted(xs)
    k = len(v) // 2
    return v[k] if len(v) % 2 else (v[k - 1] + v[k]) / 2


def interleaved(calls, rounds, sample_seconds, max_seconds):
    """Nanoseconds per call of each of ``calls``, the median over rounds sampled in turn,
    and the rounds taken."""
    batches = [calls_per_sample(c, sample_seconds) for c in calls]
    per_round = sum(n * t for n, t in batches)
    if per_round > 0:
        rounds = max(3, min(rounds, int(max_seconds / per_round)))
    samples = [[] for _ in calls]
    for _ in range(rounds):
        for k, call in enumerate(calls):
            n = batches[k][0]
            start = time.perf_counter()
            for _ in range(n):
                call()
            samples[k].append((time.perf_counter() - start) * 1e9 / n)
    return [median(s) for s in samples], rounds


def read_args(np, directory, entry, key="file"):
    """The arguments of ``entry`` (or, with ``key="direction"``, their directions)."""
    args = []
    for a in entry["args"]:
        data = np.fromfile(os.path.join(directory, a[key]), dtype="<f8")
        args.append(data.reshape(a["shape"]))
    return args


def hessian_vector(jax, f, count):
    """``jit`` of the Hessian-vector product of ``f``: forward mode over its gradient with
    respect to all ``count`` parameters, at ``args`` in the direction ``dirs``."""
    gradient = jax.grad(f, argnums=tuple(range(count)))

    def hvp(args, dirs):
        return jax.jvp(lambda *a: gradient(*a), tuple(args), tuple(dirs))[1]

    return jax.jit(hvp)


def run_one(jax, np, directory, entry, table, budget):
    name, key = entry["name"], entry["id"]
    f = table[name]
    args = [jax.device_put(a) for a in read_args(np, directory, entry)]
    primal = jax.jit(f)
    gradient = jax.jit(jax.value_and_grad(f, argnums=tuple(range(len(args)))))
    primal_value = float(jax.block_until_ready(primal(*args)))
    value, grads = jax.block_until_ready(gradient(*args))
    files = []
    for i, g in enumerate(grads):
        path = f"{key}.grad{i}.bin"
        np.asarray(g, dtype="<f8").ravel().tofile(os.path.join(directory, path))
        files.append(path)
    calls = [
        lambda: jax.block_until_ready(primal(*args)),
        lambda: jax.block_until_ready(gradient(*args)),
    ]
    hvp_answer = {}
    try:
        dirs = [jax.device_put(d) for d in read_args(np, directory, entry, "direction")]
        hvp = hessian_vector(jax, f, len(args))
        hvps = jax.block_until_ready(hvp(args, dirs))
        hvp_files = []
        for i, h in enumerate(hvps):
            path = f"{key}.hvp{i}.bin"
            np.asarray(h, dtype="<f8").ravel().tofile(os.path.join(directory, path))
            hvp_files.append(path)
        hvp_answer["hvps"] = hvp_files
        calls.append(lambda: jax.block_until_ready(hvp(args, dirs)))
    except Exception as e:  # the primal and gradient are still timed
        hvp_answer["hvp_error"] = f"{type(e).__name__}: {e}"
    times, rounds = interleaved(calls, *budget)
    if len(times) == 3:
        hvp_answer["hvp_ns"] = times[2]
    primal_ns, gradient_ns = times[0], times[1]
    return {
        "id": key,
        "name": name,
        "value": float(value),
        "primal_value": primal_value,
        "primal_ns": primal_ns,
        "gradient_ns": gradient_ns,
        "rounds": rounds,
        "gradients": files,
        **hvp_answer,
    }


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: jax_suite.py DIR (a directory holding request.json)")
    directory = sys.argv[1]
    try:
        import jax
        import jax.numpy as jnp
        import jaxlib
        import numpy as np
        from jax import lax, nn
    except ImportError as e:
        print(json.dumps({"absent": f"JAX not installed ({e})"}))
        return
    jax.config.update("jax_enable_x64", True)
    with open(os.path.join(directory, "request.json")) as f:
        request = json.load(f)
    budget = (request["rounds"], request["sample_seconds"], request["max_seconds"])
    table = programs(jnp, lax, nn)
    results = []
    for entry in request["programs"]:
        if entry["name"] not in table:
            results.append({"id": entry["id"], "name": entry["name"], "error": "not written in JAX"})
            continue
        try:
            results.append(run_one(jax, np, directory, entry, table, budget))
        except Exception as e:  # one program's failure is reported, the others still run
            error = f"{type(e).__name__}: {e}"
            results.append({"id": entry["id"], "name": entry["name"], "error": error})
        print(f"jax {entry['name']}", file=sys.stderr)
    device = jax.devices()[0]
    versions = {
        "jax": jax.__version__,
        "jaxlib": jaxlib.__version__,
        "numpy": np.__version__,
        "python": platform.python_version(),
        "device": f"{device.platform} ({device.device_kind})",
        "cores": os.cpu_count(),
        "float64": bool(jax.config.jax_enable_x64),
    }
    print(json.dumps({"versions": versions, "results": results}))


if __name__ == "__main__":
    main()
