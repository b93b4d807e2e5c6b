"""Export all-MiniLM-L6-v2 to ONNX: ``python -m lamarck.node.onnx_export MODEL_DIR OUT``.

Run once, in a subprocess, by ``lamarck.node.minilm_onnx.export_onnx``: it needs torch,
transformers and onnx, which the node process itself never loads. The graph takes
``input_ids``, ``attention_mask`` and ``token_type_ids`` (batch and sequence axes dynamic) and
returns the last hidden state; pooling and normalisation stay in the embedder (numpy). The
exported graph is then fused by onnxruntime's transformer optimiser when that is available.

The model is traced with its eager attention (plain matmul, mask add and softmax), the
pattern the optimiser knows: each layer's attention becomes one ``Attention`` operator and the
embeddings one ``EmbedLayerNormalization``, 46 operators in all. Traced through PyTorch's
fused attention (the default of recent transformers), the optimiser fused only the layer
norms and GELU and left ~300 operators; a one-text query paid the intra-op threads' hand-off
at each of them (p50 2.82 -> 2.51 ms a query standalone, the same vectors: cosine 1.000000
against sentence-transformers on 200 texts).

A second file, when a third path is given and onnxruntime can write it, holds the same graph
with the matrix weights outside the attention (18 of 24 matrices, three quarters of the
layers' weights) stored in 8 bits, in blocks of 32 with a scale each (onnxruntime's
``MatMulNBits``, symmetric, ``accuracy_level`` 4: int8 products, float accumulation). The
embedder runs one-text queries on it: the layers' weights shrink from ~42 MB to ~19 MB, a
query reads them from memory ~25 % sooner and leaves the rest of the recall more of the
processor's cache. The caller checks its vectors against this file's before it uses it.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any

__all__ = ["OPSET", "WEIGHT_BITS", "WEIGHT_BLOCK", "export", "main", "quantize_weights"]

#: ONNX opset of the export (onnxruntime >= 1.16 runs it).
OPSET = 17
# MiniLM-L6: 12 attention heads of a 384-wide hidden state (the optimiser needs both).
_HEADS = 12
_HIDDEN = 384
#: The 8-bit file's weights: bits a weight and weights a block (one scale each).
WEIGHT_BITS = 8
WEIGHT_BLOCK = 32
# onnxruntime's int8 kernels for MatMulNBits (the activations quantized a block at a time).
_ACCURACY_LEVEL = 4


def export(model_dir: Path, out: Path) -> None:
    """Write the ONNX graph of the transformer at ``model_dir`` to ``out``."""
    torch: Any = importlib.import_module("torch")
    transformers: Any = importlib.import_module("transformers")
    model = transformers.AutoModel.from_pretrained(
        str(model_dir), local_files_only=True, attn_implementation="eager"
    ).eval()

    class Encoder(torch.nn.Module):  # type: ignore[misc]
        """Keyword call of the model (its positional signature moves between versions)."""

        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            return self.inner(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state

    sample = torch.ones((2, 8), dtype=torch.long)
    axes = {0: "batch", 1: "sequence"}
    names = ["input_ids", "attention_mask", "token_type_ids"]
    raw = out.with_name(out.name + ".raw")
    with torch.no_grad():
        torch.onnx.export(
            Encoder(model),
            (sample, sample, torch.zeros_like(sample)),
            str(raw),
            input_names=names,
            output_names=["last_hidden_state"],
            dynamic_axes={**{n: axes for n in names}, "last_hidden_state": axes},
            opset_version=OPSET,
            dynamo=False,
        )
    try:
        optimizer: Any = importlib.import_module("onnxruntime.transformers.optimizer")
    except ImportError:
        raw.replace(out)
        return
    fused = optimizer.optimize_model(
        str(raw), model_type="bert", num_heads=_HEADS, hidden_size=_HIDDEN, opt_level=1
    )
    fused.save_model_to_file(str(out))
    raw.unlink(missing_ok=True)


def quantize_weights(source: Path, out: Path) -> None:
    """Write ``source``'s graph to ``out`` with its MatMul weights in ``WEIGHT_BITS`` bits.

    Raises ``ImportError`` when this onnxruntime has no such quantizer (it needs the
    ``onnx-ir`` package since 1.2x), or whatever it raises for a graph it cannot quantize.
    """
    onnx: Any = importlib.import_module("onnx")
    nbits: Any = importlib.import_module("onnxruntime.quantization.matmul_nbits_quantizer")
    quantizer = nbits.MatMulNBitsQuantizer(
        onnx.load(str(source)),
        bits=WEIGHT_BITS,
        block_size=WEIGHT_BLOCK,
        is_symmetric=True,
        accuracy_level=_ACCURACY_LEVEL,
    )
    quantizer.process()
    quantizer.model.save_model_to_file(str(out), use_external_data_format=False)


def main(argv: list[str] | None = None) -> int:
    """``MODEL_DIR OUT [OUT_8BIT]``: export (and the 8-bit file when it can), exit 0; a
    failed export exits non-zero with its traceback; a failed 8-bit file is only printed."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) not in (2, 3):
        print("usage: python -m lamarck.node.onnx_export MODEL_DIR OUT [OUT_8BIT]", file=sys.stderr)
        return 2
    export(Path(args[0]), Path(args[1]))
    if len(args) == 3:
        try:
            quantize_weights(Path(args[1]), Path(args[2]))
        # An optional file: whatever fails (an older onnxruntime, a missing onnx-ir) leaves
        # the full one, which the embedder then runs queries on too.
        except Exception as e:
            Path(args[2]).unlink(missing_ok=True)
            print(f"no 8-bit weights: {type(e).__name__}: {e}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
