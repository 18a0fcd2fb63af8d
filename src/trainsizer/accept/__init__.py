"""Acceptance of delivered hardware against a plan: `trainsizer accept`.

Check by check (inventory, health, GEMM, HBM, collectives, storage, checkpoint, thermal, burn-in), each
result names the measured figure, the threshold and where the threshold came from. The collective checks
run under torchrun (gloo on CPU, NCCL on GPUs) and across nodes via Slurm. See docs/acceptance.md for the
survey the thresholds come from.
"""
