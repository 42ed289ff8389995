"""The layout of a run's directories: every path of an ``awd-lm train --out
OUT`` tree in one place, and the writes that keep its files whole.

::

    OUT/                          RunDir(OUT)
      summary.json, valid_ppl.png     the command's rows and curves
      <model>/                    .model_run(model): the float training run
        last/model.ckpt*              the last epoch's checkpoint
        best/model.ckpt*              the best validation epoch's
        state.json, summary.json      the loop's state, the run's summary
        events.out.tfevents.*         TensorBoard events
        config.json, vocab.txt        the model directory (`modeldir`)
      <model>_quant/              .quant_run(model): --quant's fine-tuning
      <model>_compress/           .compression(model): --compress's pipeline
        pipeline.json, summary.json, valid_ppl.png
        reference/, qat/              training runs (.stage_run(name))
        vd/, l0/, mag/                a technique's ramp (.ramp_run(t))
        vd_cut/model.ckpt*            its exact cut (.cut_prefix(t))
        vd_ft/                        its survivors' run (.survivors_run(t))
        pruned/model.ckpt*            the chosen model pruned (.pruned_prefix)
        tflite_float.tflite(.json, .vocab.txt)  each exported file, its
                                      sidecar and vocabulary (.tflite_file)

A `RunDir` is only a path with names for what lies under it: it creates
nothing until asked (`makedirs`, `write_json`) and deletes only an earlier
training run's own files (`clear`).
"""
import json
import os
import shutil

__all__ = ["RunDir", "write_json", "STATE_FILE", "SUMMARY_FILE",
           "PIPELINE_FILE", "PLOT_FILE", "CONFIG_FILE", "VOCAB_FILE",
           "CHECKPOINT_NAME", "LAST_DIR", "BEST_DIR", "QUANT_SUFFIX",
           "COMPRESS_SUFFIX", "EVENTS_PREFIX", "RUN_FILES",
           "TECHNIQUE_DIRS", "BEST_CHECKPOINT"]

#: A training run's loop state (what resume reads).
STATE_FILE = "state.json"
#: A run's (or a command's, or a pipeline's) summary.
SUMMARY_FILE = "summary.json"
#: What the compression pipeline finished (what its resume reads).
PIPELINE_FILE = "pipeline.json"
#: The validation curves.
PLOT_FILE = "valid_ppl.png"
#: A model directory's description and vocabulary (what `modeldir`
#: reads and writes).
CONFIG_FILE = "config.json"
VOCAB_FILE = "vocab.txt"
#: The prefix of every checkpoint in the tree, inside its folder.
CHECKPOINT_NAME = "model.ckpt"
#: A training run's checkpoint folders: the last epoch's, the best one's.
LAST_DIR = "last"
BEST_DIR = "best"
#: A quantization-aware run's folder beside its float model's, and the
#: compression pipeline's default one.
QUANT_SUFFIX = "_quant"
COMPRESS_SUFFIX = "_compress"
#: TensorBoard's event files of a training run start with it.
EVENTS_PREFIX = "events.out.tfevents."
#: The best checkpoint's prefix inside its run (config.json's
#: ``checkpoint``).
BEST_CHECKPOINT = os.path.join(BEST_DIR, CHECKPOINT_NAME)
#: The files and folders that mark a directory as holding a training run.
RUN_FILES = (STATE_FILE, SUMMARY_FILE, LAST_DIR, BEST_DIR)
#: A compression technique's folder names in the pipeline's tree (also
#: its short name in the pipeline's plot).
TECHNIQUE_DIRS = {"variational_dropout": "vd", "l0": "l0",
                  "magnitude": "mag"}


def write_json(path, obj):
    """Writes ``obj`` to ``path`` as indented JSON with sorted keys,
    atomically: a temporary file beside it renamed over it, so a kill
    leaves the old file (or none), never half of one.

    Its numbers must be Python ints / floats: ``json`` rejects numpy
    scalars.

    Raises:
      TypeError: a value JSON cannot hold (the old file is kept).
      OSError: the directory cannot be written.
    """
    tmp = path + ".tmp"
    with open(tmp, "w") as handle:
        json.dump(obj, handle, indent=1, sort_keys=True)
    os.replace(tmp, path)


class RunDir(object):
    """A directory of the run tree (see the module's docstring): the
    ``--out`` root, one training run, or the compression pipeline's
    directory; its attributes and methods name the paths under it.

    Args:
      path: the directory (str; need not exist).
    """

    def __init__(self, path):
        self.path = path

    def __repr__(self):
        return "RunDir(%r)" % (self.path,)

    def __eq__(self, other):
        return isinstance(other, RunDir) and other.path == self.path

    def __ne__(self, other):
        return not self == other

    def __hash__(self):
        return hash(self.path)

    def join(self, *names):
        """The path of ``names`` under this directory."""
        return os.path.join(self.path, *names)

    def makedirs(self):
        """Creates the directory (and its parents) if missing; returns
        self."""
        os.makedirs(self.path, exist_ok=True)
        return self

    def exists(self, name):
        """Whether ``name`` (a file or folder) exists under it."""
        return os.path.exists(self.join(name))

    def write_json(self, name, obj):
        """Writes ``obj`` to the file ``name`` under it, atomically
        (`write_json`). Returns the file's path."""
        path = self.join(name)
        write_json(path, obj)
        return path

    # The --out root: the runs of each model.
    def model_run(self, model):
        """``OUT/<model>``: a model's float training run."""
        return RunDir(self.join(model))

    def quant_run(self, model):
        """``OUT/<model>_quant``: its quantization-aware fine-tuning."""
        return RunDir(self.join(model + QUANT_SUFFIX))

    def compression(self, model, out=None):
        """The compression pipeline's directory of a model: ``out`` (the
        command's --compress-out) when given, else ``OUT/<model>_compress``.
        """
        return RunDir(out if out else self.join(model + COMPRESS_SUFFIX))

    # A training run's files.
    @property
    def state_file(self):
        """``state.json``: the training loop's state."""
        return self.join(STATE_FILE)

    @property
    def summary_file(self):
        """``summary.json``."""
        return self.join(SUMMARY_FILE)

    @property
    def config_file(self):
        """``config.json``: the model directory's description."""
        return self.join(CONFIG_FILE)

    @property
    def plot_file(self):
        """``valid_ppl.png``: the validation curves."""
        return self.join(PLOT_FILE)

    @property
    def last_dir(self):
        """``last/``: the last epoch's checkpoint folder."""
        return self.join(LAST_DIR)

    @property
    def best_dir(self):
        """``best/``: the best validation epoch's checkpoint folder."""
        return self.join(BEST_DIR)

    @property
    def last_prefix(self):
        """``last/model.ckpt``: the last epoch's checkpoint prefix."""
        return os.path.join(self.last_dir, CHECKPOINT_NAME)

    @property
    def best_prefix(self):
        """``best/model.ckpt``: the best checkpoint's prefix (what
        `train.best_checkpoint` names)."""
        return os.path.join(self.best_dir, CHECKPOINT_NAME)

    def holds_run(self, names=RUN_FILES):
        """The first of ``names`` that exists under it (a sign of an
        earlier run), or None."""
        for name in names:
            if self.exists(name):
                return self.join(name)
        return None

    def clear(self):
        """Deletes what an earlier training run wrote here (last/, best/,
        state.json, summary.json, TensorBoard events), and nothing else
        (config.json, vocab.txt and any other file stay). A missing
        directory is left missing."""
        if not os.path.isdir(self.path):
            return
        for name in os.listdir(self.path):
            path = self.join(name)
            if name in (LAST_DIR, BEST_DIR) and os.path.isdir(path):
                shutil.rmtree(path)
            elif (name in (STATE_FILE, SUMMARY_FILE)
                  or name.startswith(EVENTS_PREFIX)):
                os.remove(path)

    # The compression pipeline's tree.
    @property
    def pipeline_file(self):
        """``pipeline.json``: the stages the pipeline finished."""
        return self.join(PIPELINE_FILE)

    def stage_run(self, name):
        """A training stage's run directory in the pipeline
        (``reference``, ``qat``)."""
        return RunDir(self.join(name))

    def ramp_run(self, technique):
        """A technique's first phase (the ramp to the target)."""
        return RunDir(self.join(TECHNIQUE_DIRS[technique]))

    def survivors_run(self, technique):
        """A technique's second phase (its cut's survivors fine-tuned)."""
        return RunDir(self.join(TECHNIQUE_DIRS[technique] + "_ft"))

    def cut_prefix(self, technique):
        """The checkpoint prefix of a technique's exact cut."""
        return self.join(TECHNIQUE_DIRS[technique] + "_cut", CHECKPOINT_NAME)

    @property
    def pruned_prefix(self):
        """The checkpoint prefix of the chosen model pruned."""
        return self.join("pruned", CHECKPOINT_NAME)

    def tflite_file(self, stage):
        """The exported ``<stage>.tflite`` file."""
        return self.join("%s.tflite" % stage)
