"""``awd-lm export --model DIR --format float|uint8|int8 [--storage
sparse] [--lstm fused] --out PATH``: write a model directory's model as a
TFLite file, with its sidecar ``PATH.json`` and its vocabulary
``PATH.vocab.txt`` beside it (`lm.export_model`).

uint8 (fully 8-bit, TOCO) needs a quantization-aware model directory
(``train --quant`` makes ``<out>/<model>_quant``); float needs a float one;
int8 (int8 weights, float activations: TFLite's hybrid kernels) takes
either. ``--storage sparse`` stores the pruned weights in TFLite's sparse
format (float or int8, TensorFlow 2.x; docs/sparse_tflite.md). ``--lstm
fused`` writes each LSTM layer as one builtin TFLite LSTM op (float or
int8; int8 sparse in 1 x 16 blocks, the fastest file of a block-pruned
model; one token per call; TensorFlow 2.x). The output
is checked (its folder created, or refused when it is not a writable
directory; an existing file refused without --overwrite) before any
conversion.

``--model`` may also be a compression pipeline's folder (``--compress-out``,
by default ``<out>/<model>_compress``) or a run's ``--out`` holding one:
without --format, --storage, --layout, --lstm, --batch-size and
--num-steps, export copies the file the pipeline recommends (its
summary.json's ``recommended``: the fastest within the perplexity target,
`ship.recommend`) with its sidecar and vocabulary, and says
which; any of them given exports that file's model directory (``qat/``,
``pruned/``) with the file's format, storage and LSTM ops, the flags
given winning.

Exit status: 0 written; 2 bad input (one line naming the flag or path,
e.g. a checkpoint whose data file is missing or truncated).
"""
import os

from tf1_awd_sparse.base import _cli
from tf1_awd_sparse.base.checks import check_writable_dir

__all__ = ["FORMATS", "STORAGES", "parse_args", "check_out", "main"]

# The same as export.WEIGHT_FORMATS / STORAGES and sparse_storage.LAYOUTS
# (tests/export/test_sparse_storage.py checks),
# spelled here so that --help loads no TensorFlow.
FORMATS = ("float", "uint8", "int8")
STORAGES = ("dense", "sparse")
LAYOUTS = ("auto", "fast", "csr", "1x4", "1x16")
LSTM_KINDS = ("unrolled", "fused")


def parse_args(argv=None):
    """The flags (--model, --format, --storage, --layout, --lstm, --out,
    --batch-size, --num-steps, --overwrite); bad values, and --layout
    without --storage sparse (which would ignore it), exit 2 naming the
    flag."""
    p = _cli.ArgumentParser(prog="awd-lm export", description=__doc__,
                            formatter_class=_raw())
    p.add_argument("--model", required=True, help="model directory "
                   "(with config.json)")
    p.add_argument("--format", choices=FORMATS,
                   help="float, uint8 (a --quant model) or int8 (int8 "
                   "weights, float activations); needed for a model "
                   "directory, a pipeline's folder defaults to its "
                   "recommended file's")
    p.add_argument("--storage", choices=STORAGES, default=None,
                   help="sparse: pruned weights in TFLite's sparse format "
                   "(float or int8; TensorFlow 2.x)")
    p.add_argument("--layout", choices=LAYOUTS, default=None,
                   help="with --storage sparse (default auto): auto (fewest "
                   "bytes), fast "
                   "(the layouts TFLite's sparse kernels read: int8 1x16, "
                   "a width 16 does not divide padded to a multiple of "
                   "16; float 1x4), or one layout")
    p.add_argument("--lstm", choices=LSTM_KINDS, default=None,
                   help="fused: one builtin TFLite LSTM op per layer "
                   "(--format float or int8; with --storage sparse int8 "
                   "1x16 blocks; one token per call; TensorFlow 2.x)")
    p.add_argument("--out", required=True, help="the .tflite file to write")
    p.add_argument("--batch-size", type=int, default=None,
                   help="the file's fixed batch (default 1)")
    p.add_argument("--num-steps", type=int, default=None,
                   help="the file's fixed window (default 10; 1, the only "
                   "one, with --lstm fused)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace an existing --out file")
    args = p.parse_args(argv)
    _recommended(p, args)
    if args.copy:
        return args
    if args.format is None:
        p.error("--format is needed: --model %s is no compression "
                "pipeline's folder (whose recommended file export writes "
                "without it)" % args.model)
    args.storage = args.storage or "dense"
    args.lstm = args.lstm or "unrolled"
    args.batch_size = 1 if args.batch_size is None else args.batch_size
    if args.layout is not None and args.storage != "sparse":
        p.error("--layout has no effect here: it needs --storage sparse "
                "(a dense file stores no layout); leave it out")
    args.layout = args.layout or "auto"
    if args.num_steps is None:
        args.num_steps = 1 if args.lstm == "fused" else 10
    if args.lstm == "fused" and args.num_steps != 1:
        p.error("--lstm fused streams one token per call: --num-steps must "
                "be 1, got %d" % args.num_steps)
    for flag in ("batch_size", "num_steps"):
        if getattr(args, flag) < 1:
            p.error("--%s must be >= 1, got %d"
                    % (flag.replace("_", "-"), getattr(args, flag)))
    return args


#: The flags that shape the file: any of them given, a pipeline's folder
#: re-exports its recommended file's model instead of copying the file.
_SHAPING = ("format", "storage", "layout", "lstm", "batch_size", "num_steps")


def _recommended(parser, args):
    """Sets ``args.ship`` to (pipeline folder, `ship.recommend`'s
    entry) when --model is a compression pipeline's folder or a run's
    --out holding one (None otherwise), and ``args.copy`` to whether the
    file is copied (no flag of `_SHAPING` given); with one given,
    --model becomes the file's model directory and --format, --storage,
    --lstm not given the file's. Exits 2 (one line) on a folder holding
    several pipelines, a summary without a recommendation, or flags for
    a file of another model."""
    from tf1_awd_sparse.awd_lm.config import modeldir   # no TensorFlow
    from tf1_awd_sparse.awd_lm.training.compression import ship
    args.ship, args.copy = None, False
    if os.path.isfile(os.path.join(args.model, modeldir.CONFIG_FILE)):
        return
    try:
        found = ship.pipeline_dirs(args.model)
        entry = ship.read_recommendation(found[0]) \
            if len(found) == 1 else None
    except ValueError as e:
        parser.error(str(e))
    if not found:
        return
    if len(found) > 1:
        parser.error("--model %s holds %d compression pipelines (%s): give "
                     "one of them as --model" % (args.model, len(found),
                                                 ", ".join(found)))
    if entry is None:
        parser.error("--model %s: its compression pipeline's summary.json "
                     "names no recommended file (an older version's: "
                     "awd-lm compress on the run writes one)" % found[0])
    args.ship = (found[0], entry)
    given = [k for k in _SHAPING if getattr(args, k) is not None]
    if not given:
        args.copy = True
        return
    if entry["model_dir"] is None:
        parser.error("--%s: the recommended file %s is another model's, "
                     "with no model directory to export again; give --model "
                     "a model directory, or leave the flags out to copy the "
                     "file" % (given[0].replace("_", "-"), entry["path"]))
    args.model = os.path.join(found[0], entry["model_dir"])
    for flag in ("format", "storage", "lstm"):
        if getattr(args, flag) is None:
            setattr(args, flag, entry[flag])


def _raw():
    import argparse
    return argparse.RawDescriptionHelpFormatter


def check_out(path, overwrite):
    """Creates ``path``'s folder or refuses it, before any work.

    Raises:
      ValueError: the folder is (or lies under) a file, or cannot be made
        or written (`checks.check_writable_dir`: a new file is tried),
        or the file exists (without ``overwrite``) or is a directory;
        named --out.
    """
    folder = os.path.dirname(os.path.abspath(path))
    check_writable_dir(folder, "--out %s" % path)
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as e:
        raise ValueError("--out %s: cannot create %s (%s)"
                         % (path, folder, e.strerror or e))
    if os.path.isdir(path):
        raise ValueError("--out %s: is a directory" % path)
    if os.path.exists(path) and not overwrite:
        raise ValueError("--out %s: exists: give a new --out%s" % (path, (
            ", or replace this file with --overwrite" if _replaceable(path)
            else "")))


def _replaceable(path):
    """Whether an existing --out may be offered for --overwrite: a
    ``.tflite`` file that is no described model (no sidecar: e.g. not a
    compression pipeline's) and not inside a model directory."""
    from tf1_awd_sparse.awd_lm.config import modeldir   # no TensorFlow
    folder = os.path.dirname(os.path.abspath(path))
    return (path.endswith(".tflite") and not os.path.exists(path + ".json")
            and not os.path.exists(os.path.join(folder, modeldir.CONFIG_FILE)))


def main(argv=None):
    """Runs the command line; returns 0 (bad input exits 2)."""
    args = parse_args(argv)
    # Imported here, after parsing: --help and bad flags need no TensorFlow.
    from tf1_awd_sparse.base import compat as _compat
    _compat.graph_mode_program()   # TF 2.x: the v1 graph it converts
    from tf1_awd_sparse.awd_lm.config import modeldir
    from tf1_awd_sparse.awd_lm.inference import export, lm
    if args.copy:
        return _copy(args)
    try:
        if not os.path.isdir(args.model):
            raise ValueError("--model %s: not a directory" % args.model)
        config = modeldir.read_config(os.path.join(args.model,
                                                   modeldir.CONFIG_FILE))
        # The library's refusals, worded for the flags.
        export.check_formats(args.format, args.storage, config["params"],
                             model_dir=args.model, lstm=args.lstm,
                             layout=args.layout)
        check_out(args.out, args.overwrite)
    except ValueError as e:  # modeldir.ConfigError included
        inside = modeldir.model_dirs_in(args.model)
        if inside and not os.path.isfile(
                os.path.join(args.model, modeldir.CONFIG_FILE)):
            e = "--model %s: a run directory; its model directories: %s" % (
                args.model, ", ".join(inside))
        _cli.fail(e)
    try:
        sidecar = lm.export_model(args.model, args.out, args.batch_size,
                                  args.num_steps, weights=args.format,
                                  storage=args.storage, layout=args.layout,
                                  lstm=args.lstm)
    except (ValueError, OSError) as e:
        _cli.fail(e)
    # What the file stores sparse, read from it (the sidecar's `storage`),
    # not --storage: weights with too few zeros stay dense.
    stored = len(modeldir.read_config(sidecar)["tflite"].get("storage") or [])
    print("%s: %d bytes (%s, %s%s%s); sidecar %s" % (
        args.out, os.path.getsize(args.out), args.format,
        "%d tensors stored sparse" % stored if stored else "dense" + (
            " (--storage sparse: no weight had the zeros to store sparse)"
            if args.storage == "sparse" else ""),
        ", " + args.layout if stored else "",
        ", fused LSTM ops" if args.lstm == "fused" else "", sidecar) + (
            "; the model of %s's recommended file %s, the flags given "
            "winning" % (args.ship[0], args.ship[1]["path"])
            if args.ship else ""))
    return 0


def _copy(args):
    """Copies a pipeline's recommended file, its sidecar and vocabulary to
    --out (nothing written on failure); prints one line saying which."""
    from tf1_awd_sparse.awd_lm.inference import model_files
    folder, entry = args.ship
    source = os.path.join(folder, entry["path"])
    try:
        check_out(args.out, args.overwrite)
        sidecar = model_files.copy_model_file(source, args.out)
    except ValueError as e:   # modeldir.ConfigError included
        _cli.fail(e)
    except OSError as e:
        _cli.fail("--out %s: cannot write (%s)" % (args.out,
                                                   e.strerror or e))
    print("%s: %d bytes, copied from %s, the file %s recommends (%s, %s, "
          "%s LSTM; ppl %.3f x ref, %s the %s x ref target); sidecar %s" % (
              args.out, os.path.getsize(args.out), source, folder,
              entry["format"] or "-", entry["storage"] or "-",
              entry["lstm"] or "-", entry["ratio_to_reference"],
              "the fastest within" if entry["within_target"] else
              "the lowest perplexity, none within",
              "%g" % entry["ship_ppl_target"], sidecar))
    return 0


if __name__ == "__main__":  # as ``awd-lm export`` (`main.run_as_main`)
    from tf1_awd_sparse.awd_lm.programs.main import run_as_main
    run_as_main("export")
