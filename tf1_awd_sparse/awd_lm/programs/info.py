"""``awd-lm info PATH``: what PATH holds.

* a model directory (config.json): stage, model, technique, sparsity,
  quant, perplexities, bytes of its checkpoint and of .tflite files in it;
* a run's --out (or a compression pipeline's folder): its model
  directories, one line each, then the file each compression pipeline in
  it recommends (its summary.json's ``recommended``: the file, its bytes,
  speed and perplexity against ``/ref``; `ship.recommend`);
* a .tflite file: its sidecar (``FILE.json``).

Exit status: 0; 2 (one line naming the path) when it is none of these,
or a model directory without its whole checkpoint (an index and every
data shard, none empty or shorter than the index records:
`tf1_awd_sparse.base.checkpoint_files`), or a ``.tflite`` file that is
not a whole TFLite flatbuffer (`tf1_awd_sparse.export.verify`), or whose
sidecar or vocabulary cannot be read; 141 (as a tool killed by SIGPIPE),
silently, when the reader of its output closed it (``info ... | head``).
"""
import glob
import os

from tf1_awd_sparse.base import _cli


__all__ = ["shown", "model_lines", "run_lines", "pipeline_lines",
           "info_lines", "main"]


def shown(value):
    """A config value as info prints it: floats to 2 decimals (a
    perplexity, a sparsity as a fraction), None (not measured) as ``-``."""
    if value is None:
        return "-"
    if isinstance(value, float):
        return "%.2f" % value
    return str(value)


def _bytes(pattern):
    return sum(os.path.getsize(p) for p in glob.glob(pattern))


def model_lines(directory):
    """``key: value`` lines of a model directory's config.json.

    Raises:
      modeldir.ConfigError: a bad config.json (named).
      ValueError: a checkpoint whose index or a data shard is missing,
        empty, damaged or truncated
        (`base.checkpoint_files.check_checkpoint_files`).
    """
    # Imported here: no TF for --help.
    from tf1_awd_sparse.awd_lm.config import modeldir
    config = modeldir.read_config(os.path.join(directory,
                                               modeldir.CONFIG_FILE))
    produced = config.get("produced_by", {})
    checkpoint = os.path.join(directory, config["checkpoint"])
    lines = ["%s: model directory" % directory]
    for key in ("stage", "model", "technique", "sparsity", "valid_ppl",
                "test_ppl"):
        lines.append("  %s: %s" % (key, shown(produced.get(key))))
    quant = config["params"].quantization.quant
    lines.append("  quant: %s" % bool(quant))
    # Its files' names and sizes and the index's record (no TensorFlow).
    from tf1_awd_sparse.base.checkpoint_files import check_checkpoint_files
    check_checkpoint_files(checkpoint)
    lines.append("  checkpoint: %s (%d bytes)"
                 % (config["checkpoint"], _bytes(checkpoint + ".*")))
    for path in sorted(glob.glob(os.path.join(directory, "*.tflite"))):
        lines.append("  tflite: %s (%d bytes)" % (os.path.basename(path),
                                                  os.path.getsize(path)))
    return lines


def run_lines(directory, inside):
    """One line per model directory of a run's --out.

    Raises:
      modeldir.ConfigError: a bad config.json (named), as `model_lines`.
    """
    lines = ["%s: run directory, %d model directories" % (directory,
                                                          len(inside))]
    from tf1_awd_sparse.awd_lm.config import modeldir  # no TF for --help
    for path in inside:
        produced = modeldir.read_config(os.path.join(
            path, modeldir.CONFIG_FILE)).get("produced_by", {})
        lines.append("  %s: stage %s, valid_ppl %s, test_ppl %s" % (
            path, shown(produced.get("stage")),
            shown(produced.get("valid_ppl")),
            shown(produced.get("test_ppl"))))
    return lines


def pipeline_lines(path):
    """One line per compression pipeline at ``path`` or directly inside
    it: the file it recommends, with its figures, as under its table.

    Raises:
      ValueError: a pipeline's summary.json that is not JSON (named).
    """
    # No TensorFlow, no numpy: the pipeline's summary.json only.
    from tf1_awd_sparse.awd_lm.training.compression import ship
    lines = []
    for folder in ship.pipeline_dirs(path):
        entry = ship.read_recommendation(folder)
        if entry is None:
            lines.append("  %s: compression pipeline, no recommended file "
                         "in its summary.json (an older version's: awd-lm "
                         "compress on the run writes one, retraining "
                         "nothing)" % folder)
        else:
            lines.append("  %s: %s" % (folder,
                                       ship.recommended_line(entry)))
    return lines


def info_lines(path):
    """The lines ``awd-lm info`` prints for ``path``.

    Raises:
      ValueError: none of a model directory, a run's --out or a .tflite
        file with its sidecar (naming the path); a bad config; a model
        directory's checkpoint not whole (`base.checkpoint_files`); a
        ``.tflite`` file that is not a whole TFLite flatbuffer
        (``TFLiteFileError``).
    """
    from tf1_awd_sparse.awd_lm.config import modeldir  # no TF for --help
    if os.path.isfile(os.path.join(path, modeldir.CONFIG_FILE)):
        return model_lines(path)
    inside = modeldir.model_dirs_in(path)
    if inside:
        return run_lines(path, inside) + pipeline_lines(path)
    if os.path.isfile(path) and path.endswith(".tflite"):
        sidecar = modeldir.sidecar_path(path)
        if not os.path.isfile(sidecar):
            raise ValueError("%s: no sidecar %s beside it"
                             % (path, os.path.basename(sidecar)))
        # No TensorFlow: the flatbuffer checked by the standard library's
        # reader, the sidecar and its vocabulary by the one config reader.
        from tf1_awd_sparse.export.tflite_file import verify
        verify(path)
        modeldir.read_config(sidecar)
        with open(sidecar) as handle:
            text = handle.read()
        return ["%s: tflite file (%d bytes), sidecar %s:"
                % (path, os.path.getsize(path), sidecar), text.rstrip()]
    raise ValueError("%s: not a model directory, a run directory or a "
                     ".tflite file" % path)


def main(argv=None):
    """Runs the command line; returns 0 (bad input exits 2)."""
    p = _cli.ArgumentParser(prog="awd-lm info", description=__doc__)
    p.add_argument("path", help="model directory, run --out or .tflite")
    args = p.parse_args(argv)
    try:
        print("\n".join(info_lines(args.path)))
    except ValueError as e:
        _cli.fail(e)
    return 0


if __name__ == "__main__":  # as ``awd-lm info`` (`main.run_as_main`)
    from tf1_awd_sparse.awd_lm.programs.main import run_as_main
    run_as_main("info")
