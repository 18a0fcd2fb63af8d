# Settles (not run yet: written 2026-12-07, no GPU lent that session; docs/known-gaps.md 289 (c)) whether the HF
# Trainer's memory tracker thread slows the host's issue of eager PyTorch ops: fms-acceleration's a100_80gb.csv and
# refs_orca runs (perf_heldout61, perf_heldout64) ran with skip_memory_metrics False, its MoE file (perf_heldout66) not;
# the estimate's rows on that box ask a host about twice as slow as the shipped per-op figure (known-gaps 273 (c), 279 (b)).
# Run: python benchmarks/device/trainer_memory_tracker.py (needs torch; psutil where installed; --tiny on a CPU)
"""Host microseconds an eager op takes to issue, alone and beside transformers' TrainerMemoryTracker thread.

The thread as transformers 4.6-4.5x write it (trainer_utils.py TrainerMemoryTracker.peak_monitor_func, run by start()
for all of Trainer.train() when skip_memory_metrics is False): `while True: peak = max(process.memory_info().rss,
peak)` with no sleep ("can't sleep or will not catch the peak right"), psutil.Process.memory_info, whose Linux path
reads /proc/<pid>/statm; where psutil is not installed, the same read in the same Python shape (open, readline, split,
a namedtuple). PyTorch's Python bindings release the GIL around each op's dispatch (the generated
`pybind11::gil_scoped_release` in each dispatch_* lambda), so the thread can take it during the launch and the
issuing thread waits for it back: the op's host time grows by the thread's Python between its syscalls.

Cases, each alone and beside the thread: python_loop (a pure-Python loop that never releases the GIL: the control; it
slows only if the thread takes a CPU share, not the GIL), mm (torch.mm 64 x 64 x 64 in bf16 back to back without a
sync: the method of perf_constants.yaml host_sync launch_bound_op_s, NVIDIA's 14.8 us; on a CPU without --tiny also
16^3 and 128^3), split_loop_fwd (GraniteMoeParallelExperts' forward as transformers 4.45-4.52 write it: 40 experts,
F.linear on each split of 8 x 240 x 8 routed rows a 1,536 -> 1,024 projection, under no_grad: the host-bound loop of
perf_heldout66's granite rows) and split_loop_fb (the same forward and its backward: autograd's engine runs the
backward's C++ ops without the GIL); the split loops on a GPU or under --tiny only. Per case: host us an op (wall,
perf_counter around the issue, one sync after), the issuing thread's CPU us an op (time.thread_time: unchanged where it
waits for the GIL off the CPU) and the thread's loop iterations an op, medians of N runs. One JSON line a case and
setting, then one line of ratios (wall beside over wall alone). Budget on an H100: under a minute; on a CPU without
--tiny (the mm cases and the control) about as long. --tiny: tiny widths on the CPU (a smoke test).
"""

import collections
import json
import os
import sys
import threading
import time

import torch
import torch.nn.functional as F

TINY = "--tiny" in sys.argv
CUDA = torch.cuda.is_available() and not TINY
DEV = "cuda" if CUDA else "cpu"
DT = torch.bfloat16 if CUDA else torch.float32
E, D_IN, D_OUT, ROWS = (8, 32, 16, 64) if TINY else (40, 1536, 1024, 8 * 240 * 8)
OPS, WARM, N = (50, 1, 3) if TINY else (2000, 2, 5)
Mem = collections.namedtuple("pmem", "rss vms shared text lib data dirty")


def statm_rss() -> int:
    """psutil's Linux memory_info in its Python shape: /proc/<pid>/statm's first seven fields in bytes."""
    page = os.sysconf("SC_PAGE_SIZE")
    with open(f"/proc/{os.getpid()}/statm", "rb") as f:
        return Mem(*(int(x) * page for x in f.readline().split()[:7])).rss


def rss_reader():
    """psutil.Process().memory_info().rss where psutil is installed (TrainerMemoryTracker's call), else statm_rss."""
    try:
        import psutil
    except ImportError:
        return statm_rss, "statm"
    process = psutil.Process()
    return (lambda: process.memory_info().rss), "psutil"


class Tracker:
    """TrainerMemoryTracker.peak_monitor_func in a thread, counting its iterations."""

    def __init__(self, read) -> None:
        self.read, self.on, self.iterations, self.peak = read, False, 0, -1
        self.thread = threading.Thread(target=self.loop, daemon=True)

    def loop(self) -> None:
        while True:
            self.peak = max(self.read(), self.peak)
            self.iterations += 1
            if not self.on:
                break

    def __enter__(self):
        self.on = True
        self.thread.start()
        while not self.iterations:  # running before the first measured op
            time.sleep(1e-4)
        return self

    def __exit__(self, *exc) -> None:
        self.on = False
        self.thread.join()


def cases() -> dict:
    """name -> (callable, ops it issues a call): the control, the mm sizes and (on a GPU or --tiny) the split loops."""
    w = torch.randn(E, D_OUT, D_IN, device=DEV, dtype=DT, requires_grad=True)
    x = torch.randn(ROWS, D_IN, device=DEV, dtype=DT, requires_grad=True)
    sizes = [ROWS // E] * E

    def python_loop() -> None:
        for _ in range(OPS):
            s = 0
            for i in range(40):
                s += i

    def mm_of(n: int):
        a = torch.randn(n, n, device=DEV, dtype=DT)

        def mm() -> None:
            for _ in range(OPS):
                torch.mm(a, a)
        return mm

    def split_loop(inputs):  # GraniteMoeParallelExperts.forward
        parts = inputs.split(sizes, dim=0)
        return torch.cat([F.linear(parts[i], w[i]) for i in range(E)], dim=0)

    def fwd() -> None:
        with torch.no_grad():
            split_loop(x)

    def fb() -> None:
        split_loop(x).sum().backward()

    out = {"python_loop": (python_loop, OPS), "mm": (mm_of(64), OPS)}
    if CUDA or TINY:
        return out | {"split_loop_fwd": (fwd, 2 * E + 2), "split_loop_fb": (fb, 2 * E + 2)}
    return out | {"mm16": (mm_of(16), OPS), "mm128": (mm_of(128), OPS)}


def measure(fn, ops: int, tracker: Tracker | None) -> dict:
    """Median wall and CPU us an op over N runs, and the tracker's iterations an op."""
    for _ in range(WARM):
        fn()
    if CUDA:
        torch.cuda.synchronize()
    rows = []
    for _ in range(N):
        i0, c0, t0 = tracker.iterations if tracker else 0, time.thread_time(), time.perf_counter()
        fn()
        wall, cpu = (time.perf_counter() - t0) * 1e6 / ops, (time.thread_time() - c0) * 1e6 / ops
        rows.append((wall, cpu, ((tracker.iterations if tracker else 0) - i0) / ops))
        if CUDA:
            torch.cuda.synchronize()
    wall, cpu, loops = sorted(rows)[N // 2]
    return {"host_us_per_op": wall, "cpu_us_per_op": cpu, "tracker_loops_per_op": loops}


def main() -> None:
    if not CUDA:
        torch.set_num_threads(1)  # one issuing thread, as a training process's main thread issues
    read, how = rss_reader()
    out = {}
    for name, (fn, ops) in cases().items():
        for beside in (False, True):
            if beside:
                with Tracker(read) as t:
                    row = measure(fn, ops, t)
            else:
                row = measure(fn, ops, None)
            out[(name, beside)] = row
            print(json.dumps({"case": name, "tracker": beside, "reader": how, "device": DEV, **row}))
    print(json.dumps({"case": "ratio", "device": DEV, **{name: out[(name, True)]["host_us_per_op"]
                                                       / out[(name, False)]["host_us_per_op"] for name, _ in out}}))


if __name__ == "__main__":
    main()
