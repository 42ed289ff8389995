"""A tiny trained language model for the LanguageModel tests: a text
corpus in the PTB layout, a float run (one epoch), a quantization-aware
run from it, and both exported as TFLite files with their sidecars."""
import os

import numpy as np

def tree_bytes(root):
    """{relative path: bytes} of every file under root (to show that a
    refused command left a directory exactly as it was)."""
    found = {}
    for where, _, names in os.walk(root):
        for name in names:
            path = os.path.join(where, name)
            with open(path, "rb") as f:
                found[os.path.relpath(path, root)] = f.read()
    return found


def write_corpus(directory, seed=0):
    """train/valid/test.txt of template sentences over WORDS (valid and
    test hold a word the training split lacks: it becomes <unk>)."""
    rng = np.random.RandomState(seed)
    os.makedirs(directory, exist_ok=True)
    nouns, verbs = ["cat", "dog", "mat", "log"], ["sat", "ran", "saw"]
    adjectives = ["big", "small", "red"]
    for split, lines in (("train", 300), ("valid", 40), ("test", 40)):
        with open(os.path.join(directory, split + ".txt"), "w") as handle:
            for _ in range(lines):
                words = ["the", adjectives[rng.randint(3)],
                         nouns[rng.randint(4)], verbs[rng.randint(3)], "on",
                         "a", nouns[rng.randint(4)]]
                if rng.rand() < 0.5:
                    words += ["and", "it", verbs[rng.randint(3)]]
                if split != "train" and rng.rand() < 0.2:
                    words[1] = "zebra"
                handle.write(" ".join(words) + "\n")
    return directory


def tiny_params():
    """A two-layer model of a few hundred weights."""
    from tf1_awd_sparse.awd_lm.config import presets
    return presets.params_for("demo", "plain", {
        "emb_size": 8, "hidden_size": 12, "num_layers": 2, "batch_size": 4,
        "eval_batch_size": 3, "bptt": 6, "max_epochs": 1, "lr": 20.0,
        "quant_epochs": 1, "quant_delay": 0})


def summary_json(model="awd", test_ppl=10.0, **changes):
    """A complete run summary's JSON dict (a `runrecord.RunSummary`'s
    keys of the first version: one epoch, the demo preset's parameters)
    with ``changes``, for the tests of what reads summaries."""
    from tf1_awd_sparse.awd_lm.config import presets
    from tf1_awd_sparse.awd_lm.config.params import as_params
    epoch = {"epoch": 1, "train_loss": 3.0, "valid_loss": 2.5,
             "train_ppl": 20.0, "valid_ppl": 12.0, "tokens_per_s": 100.0,
             "seconds": 1.0, "averaged": False, "lr": 30.0}
    kind = "plain" if model.startswith("plain") else "awd"
    summary = {"model": model, "corpus": "c", "params": dict(as_params(
        presets.params_for("demo", kind, {})).to_flat()),
        "epochs": [epoch], "epochs_run": 1, "best_epoch": 1,
        "best_valid_ppl": 12.0, "test_ppl": test_ppl,
        "stop_reason": "max epochs (1)", "averaging_epoch": None,
        "train_seconds": 1.0, "unk_counts": {}}
    summary.update(changes)
    return summary


def build_models(root):
    """Trains and exports the models once; returns a dict of paths."""
    from tf1_awd_sparse.awd_lm.inference import lm
    from tf1_awd_sparse.awd_lm.config import presets
    from tf1_awd_sparse.awd_lm.training import train
    from tf1_awd_sparse.awd_lm.corpus import data
    corpus = data.read_ptb(write_corpus(os.path.join(root, "data")))
    params = tiny_params()
    from tf1_awd_sparse.awd_lm.config.params import as_params
    float_params, quant_params = presets.split_quant(
        as_params(dict(params, quant=True)))
    quiet = dict(log=lambda *a: None, threads=1)
    float_dir = os.path.join(root, "plain")
    summary = train.run(corpus, float_params, float_dir, **quiet)
    quant_dir = os.path.join(root, "plain_quant")
    train.run(corpus, quant_params, quant_dir,
              init_from=train.best_checkpoint(float_dir), **quiet)
    paths = {"root": root, "data": os.path.join(root, "data"),
             "float_dir": float_dir, "quant_dir": quant_dir,
             "summary": summary,
             "float_tflite": os.path.join(root, "float.tflite"),
             "uint8_tflite": os.path.join(root, "quant", "uint8.tflite")}
    os.makedirs(os.path.dirname(paths["uint8_tflite"]))
    lm.export_model(float_dir, paths["float_tflite"], batch_size=2,
                    num_steps=4)
    lm.export_model(quant_dir, paths["uint8_tflite"], batch_size=2,
                    num_steps=4)
    return paths


def loaded_models(tmp_path_factory):
    """Body of the tests' module-scoped ``models`` fixture: the tiny run
    directories and .tflite files of `build_models`, built once, with
    ``paths['load'](key)`` opening (and caching) a LanguageModel."""
    from tf1_awd_sparse.awd_lm import LanguageModel
    paths = build_models(str(tmp_path_factory.mktemp("lm")))
    loaded = {}

    def load(key):
        if key not in loaded:
            loaded[key] = LanguageModel.load(paths[key])
        return loaded[key]

    paths["load"] = load
    yield paths
    for model in loaded.values():
        model.close()


def pruned_copy(model_dir, folder, fraction=0.4, seed=0):
    """A copy of a model directory whose checkpoint has ``fraction`` of
    every weight matrix's entries (the embedding and the kernels) set to
    zero, at random, the rest as trained.

    Returns:
      ``(copy's directory, {variable name: value}`` of its checkpoint``)``.
    """
    import shutil
    import tensorflow.compat.v1 as tf
    from tf1_awd_sparse.awd_lm.config import modeldir
    copy = os.path.join(folder, os.path.basename(model_dir.rstrip(os.sep)))
    shutil.copytree(model_dir, copy)
    prefix = os.path.join(copy, modeldir.read_config(os.path.join(
        copy, modeldir.CONFIG_FILE))["checkpoint"])
    reader = tf.train.NewCheckpointReader(prefix)
    rng = np.random.RandomState(seed)
    values = {}
    for name in sorted(reader.get_variable_to_shape_map()):
        value = reader.get_tensor(name)
        if value.ndim == 2 and value.dtype == np.float32:
            value = np.where(rng.rand(*value.shape) < fraction, 0.0,
                             value).astype(np.float32)
        values[name] = value
    with tf.Graph().as_default():
        variables = [tf.Variable(value, name=name)
                     for name, value in values.items()]
        with tf.Session() as session:
            session.run(tf.variables_initializer(variables))
            tf.train.Saver(variables).save(session, prefix,
                                           write_meta_graph=False,
                                           write_state=False)
    return copy, values


class ProgressRecorder(object):
    """A tqdm-like class that keeps what each display was told: every one
    made since ``ProgressRecorder.made`` was last emptied."""
    made = []

    def __init__(self, total=None, desc="", unit=""):
        self.total, self.desc, self.unit = total, desc, unit
        self.n, self.updates, self.postfix, self.closed = 0, [], {}, False
        ProgressRecorder.made.append(self)

    def update(self, n=1):
        """Counts ``n`` more done."""
        self.n += n
        self.updates.append(n)

    def set_postfix(self, **kwargs):
        """Keeps the figures shown after the bar."""
        self.postfix = kwargs

    def close(self):
        """Marks the display closed."""
        self.closed = True
