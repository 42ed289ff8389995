"""A trained language model as a TF1 SavedModel with serving signatures.

    python -m tf1_awd_sparse.awd_lm.savedmodel --model RUN_DIR --out DIR \\
        [--overwrite]

`export_saved_model` rebuilds the model of a run / stage directory the way
`LanguageModel` does (`lm_backends.inference_graph`: `build_lm` in
evaluation mode, no dropout, batch and time None), restores its
checkpoint and writes the graph and variables with
``tf.saved_model.builder.SavedModelBuilder`` under the tag ``serve``.
Signatures (method ``tensorflow/serving/predict``; B, T any sizes >= 1):

``next_token`` (also ``serving_default``):
  inputs ``ids`` int32 ``[B, T]`` and, per layer ``l``, ``state_<l>_c`` /
  ``state_<l>_h`` float32 ``[B, units_l]`` (optional: zeros when not fed);
  outputs ``log_probs`` float32 ``[B, vocab]``, the natural-log
  distribution of the word after ``ids[:, -1]``, and the states after the
  last step ``final_<l>_c`` / ``final_<l>_h``.
``score``:
  inputs ``ids`` and ``targets`` int32 ``[B, T]`` (``targets[:, t]`` is
  the word that follows ``ids[:, t]``: for a stream ``w``, ``ids = w[:,
  :-1]``, ``targets = w[:, 1:]``) and the same optional states; outputs
  ``log_probs`` float32 ``[B, T]``, the natural-log probability of each
  target, and the final states.

The directory also holds ``config.json`` (``checkpoint``:
``variables/variables``, the SavedModel's own variables) and ``vocab.txt``
(`awd_lm.config.modeldir`), so ``LanguageModel.load(DIR)`` opens it too. The
command line refuses an existing ``--out`` without ``--overwrite`` (exit
status 2, one line), as it does bad paths.
"""
import os
import shutil
import sys
import tempfile

if __name__ == "__main__":  # the command line: quiet TensorFlow first
    import tf1_awd_sparse.base._quiet  # noqa: F401  pylint: disable=unused-import

from tf1_awd_sparse.base import _cli  # noqa: E402
from tf1_awd_sparse.base.compat import tf  # noqa: E402
from tf1_awd_sparse.awd_lm.graph import checkpoints  # noqa: E402
from tf1_awd_sparse.awd_lm.inference import (  # noqa: E402
    lm_backends, model_files)
from tf1_awd_sparse.awd_lm.config import modeldir  # noqa: E402
from tf1_awd_sparse.awd_lm.corpus import runtime  # noqa: E402

__all__ = ["export_saved_model", "SIGNATURES", "TAG", "VARIABLES",
           "parse_args", "main"]

#: The signature keys (``serving_default`` is ``next_token``).
SIGNATURES = ("next_token", "score", "serving_default")
#: The meta graph's tag (``tf.saved_model.tag_constants.SERVING``).
TAG = "serve"
#: The checkpoint prefix of a SavedModel's variables, relative to it.
VARIABLES = os.path.join("variables", "variables")


def _signatures(params):
    """Builds the serving graph into the default graph; returns its
    signature_def map."""
    ids, state, out = lm_backends.inference_graph(params, state_default=True)
    targets = tf.placeholder(tf.int32, [None, None], "targets")
    scored = tf.negative(tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=targets, logits=out.logits), name="score_log_probs")
    following = tf.nn.log_softmax(out.logits[:, -1, :],
                                  name="next_token_log_probs")
    states, finals = {}, {}
    for i, (initial, final) in enumerate(zip(state, out.final_state)):
        for part in ("c", "h"):
            states["state_%d_%s" % (i, part)] = getattr(initial, part)
            finals["final_%d_%s" % (i, part)] = tf.identity(
                getattr(final, part), name="final_%d_%s" % (i, part))
    build = tf.saved_model.signature_def_utils.predict_signature_def
    next_token = build(dict(states, ids=ids),
                       dict(finals, log_probs=following))
    score = build(dict(states, ids=ids, targets=targets),
                  dict(finals, log_probs=scored))
    return {"next_token": next_token, "score": score,
            "serving_default": next_token}


def _is_saved_model(path):
    """Whether ``path`` is a SavedModel directory (saved_model.pb)."""
    return os.path.isfile(os.path.join(path, "saved_model.pb"))


def _check_out(path, overwrite):
    """Refuses an existing ``path`` unless ``overwrite`` and it is a
    SavedModel (or empty), so that nothing else is ever deleted."""
    if not isinstance(path, str) or not path:
        raise ValueError("path must name the directory to write, got %r"
                         % (path,))
    if not os.path.lexists(path):
        return
    if not overwrite:
        # overwrite=True only where it would replace a SavedModel: never
        # suggested on a directory that may hold a trained model.
        raise ValueError("path %r exists: a SavedModel is written into a "
                         "new directory%s" % (path, (
                             " (overwrite=True replaces this SavedModel)"
                             if _is_saved_model(path) else "")))
    if not os.path.isdir(path) or os.path.islink(path) or (
            os.listdir(path) and not os.path.isfile(
                os.path.join(path, "saved_model.pb"))):
        raise ValueError("path %r is not a SavedModel directory (no "
                         "saved_model.pb): not replacing it" % (path,))


def export_saved_model(model_dir, path, overwrite=False):
    """Writes a run / stage directory's model as a SavedModel (signatures
    in the module docstring) with config.json and vocab.txt.

    Args:
      model_dir: a directory with config.json naming a checkpoint (a run,
        a compression stage, or a SavedModel of this function).
      path: the directory to write (must not exist, or see overwrite).
      overwrite: True replaces an existing SavedModel directory at path
        (never a directory without saved_model.pb).

    Returns:
      ``path``.

    Raises:
      modeldir.ConfigError: a bad model directory (named).
      checkpoints.CheckpointError: a checkpoint that cannot be restored.
      ValueError: path exists (without overwrite, or not a SavedModel).
    """
    _check_out(path, overwrite)
    config = modeldir.read_config(model_files.resolve(model_dir)[0])
    if "checkpoint" not in config:
        raise modeldir.ConfigError("%s: names no checkpoint (a .tflite "
                                   "model cannot be re-exported)"
                                   % model_dir)
    parent = os.path.dirname(os.path.abspath(path))
    os.makedirs(parent, exist_ok=True)
    staging = tempfile.mkdtemp(prefix=".savedmodel-", dir=parent)
    try:
        graph = tf.Graph()
        with graph.as_default():
            signatures = _signatures(config["params"])
            saver = tf.train.Saver(tf.global_variables())
            with tf.Session(graph=graph,
                            config=runtime.session_config(1)) as session:
                checkpoints.restore(saver, session, os.path.join(
                    config["directory"], config["checkpoint"]))
                builder = tf.saved_model.builder.SavedModelBuilder(
                    os.path.join(staging, "model"))
                builder.add_meta_graph_and_variables(
                    session, [TAG], signature_def_map=signatures,
                    clear_devices=True, strip_default_attrs=True)
                builder.save()
        produced = dict(config.get("produced_by", {}), stage="saved_model",
                        source=os.path.abspath(model_dir))
        modeldir.write_config(os.path.join(staging, "model"),
                              config["params"], config["words"], produced,
                              checkpoint=VARIABLES)
        if os.path.lexists(path):
            shutil.rmtree(path)
        os.rename(os.path.join(staging, "model"), path)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return path


def parse_args(argv):
    """The flags (``--model``, ``--out``, ``--overwrite``)."""
    parser = _cli.ArgumentParser(
        prog="awd-lm savedmodel",
        description="Export a trained language model as a SavedModel "
        "(signatures next_token, score, serving_default).")
    parser.add_argument("--model", required=True,
                        help="run / stage directory (config.json)")
    parser.add_argument("--out", required=True,
                        help="the SavedModel directory to write")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace an existing SavedModel at --out")
    return parser.parse_args(argv)


def main(argv=None):
    """Runs the command line; returns 0 (bad input exits 2)."""
    args = parse_args(argv)
    if os.path.lexists(args.out) and not args.overwrite:
        # --overwrite is suggested only where it replaces a SavedModel.
        _cli.fail("--out %s exists: give a new --out%s" % (args.out, (
            ", or replace this SavedModel with --overwrite"
            if _is_saved_model(args.out) else "")))
    from tf1_awd_sparse.base import compat as _compat
    _compat.graph_mode_program()
    try:
        export_saved_model(args.model, args.out, args.overwrite)
    except ValueError as e:  # ConfigError, CheckpointError, a bad --out
        _cli.fail(e)
    print("wrote %s (tag %s; signatures %s)" % (args.out, TAG,
                                               ", ".join(SIGNATURES)))
    return 0


if __name__ == "__main__":  # as ``awd-lm savedmodel`` (`main.run_as_main`)
    from tf1_awd_sparse.awd_lm.programs.main import run_as_main
    run_as_main("savedmodel")
