"""Where a block-pruned language model loses against its reference
(docs/results.md, "Block sparsity at little cost"): the test loss of both
models split by whether the table row of the token read (input) or of
the token predicted (target) is all zero in the pruned model, each part's
share of the extra loss; and the bound on what any shared fallback for
the zero rows could win on the output side: the pruned model's
distribution with P(the next word has a zero row | context) taken from
the reference (the within-class choice stays the pruned model's).

  .venv-tf2/bin/python tools/lm_loss_by_row.py --reference REF \\
      --model MODEL --table RUN_DIR TEXT

REF and MODEL are run directories or .tflite files (`LanguageModel.load`);
RUN_DIR is the run directory whose checkpoint holds the pruned table
(the weights its evaluation uses).
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))
from tf1_awd_sparse.awd_lm.config import modeldir  # noqa: E402
from tf1_awd_sparse.awd_lm.inference.lm import LanguageModel  # noqa: E402
from tf1_awd_sparse.awd_lm.training.compression import cuts  # noqa: E402

CHUNK = 500


def zero_rows(run_dir):
    """bool [vocab]: the rows of the run's table that are all zero, in the
    weights its evaluation uses (`cuts.effective_weights`: the
    pruning masks or the sparse technique's evaluation weights)."""
    config = modeldir.read_config(os.path.join(run_dir, "config.json"))
    weights = cuts.effective_weights(
        os.path.join(run_dir, config["checkpoint"]), config["params"])
    return np.abs(weights["lm/embedding"]).sum(axis=1) == 0


def log_probs(path, words, dead):
    """(log p of each next word, log P(the next word's row is zero)) of
    the model at ``path`` on the stream ``words`` (one stream, state
    carried)."""
    lm = LanguageModel.load(path)
    ids = np.array([lm.eos] + [lm.word_to_id.get(w, lm.unk) for w in words],
                   np.int32)
    state, picked, in_dead = None, [], []
    for start in range(0, len(ids) - 1, CHUNK):
        targets = ids[start + 1:start + 1 + CHUNK]
        lp, state = lm.step(ids[start:start + len(targets)][None], state)
        lp = lp[0]
        picked.append(lp[np.arange(len(targets)), targets])
        top = lp[:, dead].max(axis=1, keepdims=True)
        in_dead.append(np.log(np.exp(lp[:, dead] - top).sum(axis=1))
                       + top[:, 0])
    return np.concatenate(picked), np.concatenate(in_dead), ids[1:]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reference", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--table", required=True)
    parser.add_argument("text")
    args = parser.parse_args(argv)
    with open(args.text) as handle:
        words = handle.read().replace("\n", " <eos> ").split()
    dead = zero_rows(args.table)
    ref, ref_dead, targets = log_probs(args.reference, words, dead)
    pruned, pruned_dead, _ = log_probs(args.model, words, dead)
    extra = ref.sum() - pruned.sum()
    target_dead = dead[targets]
    input_dead = np.concatenate([[False], target_dead[:-1]])
    print("zero rows: %d of %d" % (dead.sum(), dead.size))
    for name, sel in (("all tokens", np.ones_like(target_dead)),
                      ("target's row zero", target_dead),
                      ("input's row zero", input_dead),
                      ("neither", ~target_dead & ~input_dead)):
        print("%-18s %5.1f %% of tokens  ppl reference %9.2f  pruned %9.2f"
              "  share of the extra loss %5.1f %%" % (
                  name, 100 * sel.mean(), np.exp(-ref[sel].mean()),
                  np.exp(-pruned[sel].mean()),
                  100 * (ref[sel].sum() - pruned[sel].sum()) / extra))
    # The fallback's bound: the class probability of the reference, the
    # choice within each class the pruned model's.
    bound = np.where(target_dead, pruned - pruned_dead + ref_dead,
                     pruned - np.log1p(-np.exp(pruned_dead))
                     + np.log1p(-np.exp(ref_dead)))
    print("P(zero-row word | context), mean: reference %.4f, pruned %.4f"
          % (np.exp(ref_dead).mean(), np.exp(pruned_dead).mean()))
    print("ppl / reference: pruned %.3f; with the reference's P(zero-row "
          "word | context) %.3f" % (np.exp(ref.mean() - pruned.mean()),
                                    np.exp(ref.mean() - bound.mean())))


if __name__ == "__main__":
    main()
