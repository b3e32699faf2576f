"""CPU per text of the MiniLM forward pass: onnxruntime's graph (what the baseline's retrieval uses) against the
plain numpy reference, for batches of 1, 4 and 16 game-like texts (25-65 words), one thread each.

Run: PYTHONPATH=$PWD .venv/bin/python benchmarks/embeddings.py [--texts 128]
"""

from __future__ import annotations

import argparse
import random
import time

from threadpoolctl import threadpool_limits

from avalon_agents.stores.embeddings import MiniLM

WORDS = ("player team quest trust merlin evil good vote approve reject said I think we should the a on "
         "of Percival Morgana leader proposal fail success").split()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--texts", type=int, default=128)
    args = parser.parse_args()
    rng = random.Random(0)
    texts = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(25, 65))) + f" {i}" for i in range(args.texts)]
    model = MiniLM()
    model._encode(texts[:4])  # warm
    print("| forward pass | batch | CPU per text (ms) |\n|---|---|---|")
    with threadpool_limits(1, "blas"):
        for name in ("onnxruntime", "numpy reference"):
            if name != "onnxruntime":
                model._forward = model._forward_reference  # type: ignore[method-assign]
            for batch in (1, 4, 16):
                cpu = time.process_time()
                for start in range(0, len(texts), batch):
                    model._encode(texts[start:start + batch])
                print(f"| {name} | {batch} | {(time.process_time() - cpu) / len(texts) * 1000:.1f} |", flush=True)


if __name__ == "__main__":
    main()
