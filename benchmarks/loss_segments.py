"""The loss path's own caching-allocator segments per loss_impl (a diagnostic; docs/known-gaps.md 213, from 203 (c)).

The HF models' loss path allocates the step's largest tensors (logit-sized: micro-batch x positions x vocabulary), in
an order each transformers release fixes. Replayed through caching_allocator.Pool (PyTorch's large-pool rules: best fit,
split when more than 1 MiB is left, a new segment when no free block holds the request, segments never merge), the
path reserves more segments than it holds at once: a tensor freed early (the 16-bit logits, the shifted copy) leaves
a segment too small for a later, larger request (the slice's full-size zero-filled gradient, the log-softmax
gradient), which is cudaMalloc'd anew. Under expandable segments (caching_allocator.ExpandablePool) freed ranges merge,
yet the 16-bit logits' range, freed below the fp32 tensors, is too small for any of them at the backward's peak.
memory_constants.yaml logits.<key>_segment_bytes_per_element is the replayed
reserved peak less the allocated peak, per logit element (tests/estimate/test_loss_segments.py holds it to this).

The sequences (the HF Trainer: compute_loss drops the model outputs before accelerator.backward, live_at_rerun none):
- upcast, transformers <= 4.45 (models/llama/modeling_llama.py LlamaForCausalLM.forward, v4.38.0-v4.45.2):
  `logits = self.lm_head(...)` (16-bit), `logits = logits.float()` (the 16-bit tensor dropped on reassignment; the
  ToCopy node saves nothing), `shift_logits = logits[..., :-1, :].contiguous()`, CrossEntropyLoss: log_softmax's fp32
  output saved; the fp32 logits and the shifted copy are freed when the forward returns (the outputs' fp32 logits with
  the outputs). Backward: NllLossBackward's zero-filled gradient, LogSoftmaxBackward's gradient (then the NLL gradient
  and the saved output are freed), SliceBackward's full-size zero-filled gradient (slice_backward), ToCopyBackward's
  16-bit gradient, which the LM head's backward takes.
- upcast-shift, transformers 4.46-4.47 (loss/loss_utils.py ForCausalLMLoss, v4.47.0): the model keeps its 16-bit logits
  (returned in the outputs); the loss upcasts them and copies the shifted slice; the rest as above.
- upcast-labels, transformers >= 4.48 and 5.x (loss/loss_utils.py ForCausalLMLoss, v4.48.0 on; read at 0114da07: `logits = logits.float()`, the labels padded and
  shifted, `labels = nn.functional.pad(labels, (0, 1), value=ignore_index)`): no slice, so no slice gradient.
A sequence's positions are one short in the shifted tensors (S - 1 of S); the figures are for S = 2,048.

Read, not applied (READ_NOT_APPLIED; known-gaps 213 (e)): Qwen-1's remote code (modeling_qwen.py QWenLMHeadModel.forward:
`lm_logits = self.lm_head(hidden_states)`, `shift_logits = lm_logits[..., :-1, :].contiguous()`, CrossEntropyLoss on
it, no .float()), which memory_validation's and ms-swift's Qwen-1 rows run under the labels upcast / auto:
- qwen1-autocast, under the HF Trainer's bf16 autocast: cross_entropy is on autocast's fp32 list, so the 16-bit shifted
  copy is cast to an fp32 copy (freed when the op returns: its ToCopy node saves nothing) before log_softmax's fp32
  output; backward the fp32 NLL and log-softmax gradients, the cast back to 16 bits, and the slice's 16-bit gradient,
  which takes the 16-bit logits' freed segment.
- qwen1-native, without autocast (DeepSpeed's 16-bit engine): the same tensors in 16 bits, no cast.

Run: python benchmarks/loss_segments.py
"""

from __future__ import annotations

from caching_allocator import ExpandablePool, Pool

# (op, tensor, bytes per logit element of the full logits, shifted) in program order; op "m" mallocs, "f" frees
_16, _32 = 2, 4
SEQUENCES: dict[str, tuple[tuple[str, str, int, bool], ...]] = {
    "upcast": (
        ("m", "logits16", _16, False), ("m", "logits32", _32, False), ("f", "logits16", 0, False),
        ("m", "shift", _32, True), ("m", "logsm", _32, True),
        ("f", "shift", 0, False), ("f", "logits32", 0, False),  # the forward returns; the Trainer drops the outputs
        ("m", "g_nll", _32, True), ("m", "g_logsm", _32, True), ("f", "g_nll", 0, False), ("f", "logsm", 0, False),
        ("m", "g_slice", _32, False), ("f", "g_logsm", 0, False),
        ("m", "g_logits16", _16, False), ("f", "g_slice", 0, False), ("f", "g_logits16", 0, False)),
    "upcast-shift": (
        ("m", "logits16", _16, False), ("m", "logits32", _32, False),
        ("m", "shift", _32, True), ("m", "logsm", _32, True),
        ("f", "shift", 0, False), ("f", "logits32", 0, False), ("f", "logits16", 0, False),
        ("m", "g_nll", _32, True), ("m", "g_logsm", _32, True), ("f", "g_nll", 0, False), ("f", "logsm", 0, False),
        ("m", "g_slice", _32, False), ("f", "g_logsm", 0, False),
        ("m", "g_logits16", _16, False), ("f", "g_slice", 0, False), ("f", "g_logits16", 0, False)),
    "upcast-labels": (
        ("m", "logits16", _16, False), ("m", "logits32", _32, False), ("m", "logsm", _32, False),
        ("f", "logits32", 0, False), ("f", "logits16", 0, False),
        ("m", "g_nll", _32, False), ("m", "g_logsm", _32, False), ("f", "g_nll", 0, False), ("f", "logsm", 0, False),
        ("m", "g_logits16", _16, False), ("f", "g_logsm", 0, False), ("f", "g_logits16", 0, False)),
}

READ_NOT_APPLIED: dict[str, tuple[tuple[str, str, int, bool], ...]] = {
    "qwen1-autocast": (
        ("m", "logits16", _16, False), ("m", "shift16", _16, True), ("m", "cast32", _32, True),
        ("m", "logsm", _32, True), ("f", "cast32", 0, False),
        ("f", "shift16", 0, False), ("f", "logits16", 0, False),
        ("m", "g_nll", _32, True), ("m", "g_logsm", _32, True), ("f", "g_nll", 0, False), ("f", "logsm", 0, False),
        ("m", "g_cast16", _16, True), ("f", "g_logsm", 0, False),
        ("m", "g_slice", _16, False), ("f", "g_cast16", 0, False), ("f", "g_slice", 0, False)),
    "qwen1-native": (
        ("m", "logits16", _16, False), ("m", "shift16", _16, True), ("m", "logsm", _16, True),
        ("f", "shift16", 0, False), ("f", "logits16", 0, False),
        ("m", "g_nll", _16, True), ("m", "g_logsm", _16, True), ("f", "g_nll", 0, False), ("f", "logsm", 0, False),
        ("m", "g_slice", _16, False), ("f", "g_logsm", 0, False), ("f", "g_slice", 0, False)),
}


def replay(impl: str, batch: int, seq: int, vocab: int, expandable: bool = False, steps: int = 1) -> tuple[int, int]:
    """(reserved, allocated peak) bytes of the loss path alone in an empty pool (`expandable`: ExpandablePool), at
    `batch` x `seq` positions, over `steps` steps (a later step re-uses the first one's segments: the same figures)."""
    pool, live, allocated, peak = ExpandablePool() if expandable else Pool(), {}, 0, 0
    for op, name, per_element, shifted in (SEQUENCES | READ_NOT_APPLIED)[impl] * steps:
        if op == "m":
            n = batch * (seq - 1 if shifted else seq) * vocab * per_element
            live[name] = (pool.malloc(n), n)
            allocated += n
            peak = max(peak, allocated)
        else:
            bid, n = live.pop(name)
            pool.release(bid)
            allocated -= n
    return pool.peak_reserved, peak


def segment_bytes_per_element(impl: str, batch: int = 4, seq: int = 2048, vocab: int = 128256,
                              expandable: bool = False) -> float:
    """The replay's reserved bytes beyond its allocated peak, per logit element (batch x seq x vocab)."""
    reserved, peak = replay(impl, batch, seq, vocab, expandable)
    return (reserved - peak) / (batch * seq * vocab)


def main() -> None:
    print("the loss path alone replayed through the caching allocator's large pool (bytes a logit element; Llama 3's "
          "128,256 vocabulary, 2,048 positions a row):")
    for rows in (4, 8):
        n = rows * 2048 * 128256
        for impl in SEQUENCES:
            reserved, peak = replay(impl, rows, 2048, 128256)
            print(f"  {rows} rows  {impl:14s} reserved {reserved / n:5.2f}  allocated peak {peak / n:5.2f}  "
                  f"segments beyond the peak {segment_bytes_per_element(impl, rows):5.2f}, expandable segments "
                  f"{segment_bytes_per_element(impl, rows, expandable=True):5.2f}")
    print("(4 rows: the slice's full-size gradient fits the shifted copy's segment rounded up to 2 MiB, 4 x 128,256 x "
          "4 B = 1.96 MiB short; 8 rows: 3.9 MiB short, cut anew)")
    print("\nread, not applied: Qwen-1's own loss code (151,936 vocabulary, 2,048 positions a row):")
    for rows in (1, 4, 8):
        n = rows * 2048 * 151936
        for impl in READ_NOT_APPLIED:
            reserved, peak = replay(impl, rows, 2048, 151936)
            print(f"  {rows} rows  {impl:14s} reserved {reserved / n:5.2f}  allocated peak {peak / n:5.2f}  "
                  f"segments beyond the peak {segment_bytes_per_element(impl, rows, 2048, 151936):5.2f}, expandable "
                  f"segments {segment_bytes_per_element(impl, rows, 2048, 151936, True):5.2f}")


if __name__ == "__main__":
    main()
