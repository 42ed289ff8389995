"""``awd-lm info``'s lines against the config.json files on disk: each
model directory of a run with its stage and perplexities as written
there, floats to 2 decimals, a figure not measured as ``-``."""
import json
import os

from tf1_awd_sparse.awd_lm.config import modeldir
from tf1_awd_sparse.awd_lm.programs import info
from tf1_awd_sparse.awd_lm.config.params import as_params
from support.lm_api import tiny_params

WORDS = ["<eos>", "<unk>", "the", "cat"]


def test_a_value_is_shown_as_info_prints_it():
    assert [info.shown(v) for v in (None, 12.345678, 0.5, 3, "float",
                                    True)] == [
        "-", "12.35", "0.50", "3", "float", "True"]


def test_a_run_is_one_line_per_model_directory_from_its_config(tmp_path):
    params = as_params(dict(tiny_params(), model="awd",
                            vocab_size=len(WORDS)))
    figures = {"plain": (123.456, None), "awd": (98.7, 101.25)}
    inside = []
    for name, (valid, test) in sorted(figures.items()):
        directory = str(tmp_path / name)
        os.mkdir(directory)
        modeldir.write_run_dir(directory, params, WORDS)
        path = os.path.join(directory, modeldir.CONFIG_FILE)
        with open(path) as handle:
            config = json.load(handle)
        config["produced_by"].update(valid_ppl=valid, test_ppl=test)
        with open(path, "w") as handle:
            json.dump(config, handle)
        inside.append(directory)
    assert modeldir.model_dirs_in(str(tmp_path)) == inside
    stage = config["produced_by"]["stage"]
    assert info.run_lines(str(tmp_path), inside) == [
        "%s: run directory, 2 model directories" % tmp_path,
        "  %s: stage %s, valid_ppl 98.70, test_ppl 101.25"
        % (inside[0], stage),
        "  %s: stage %s, valid_ppl 123.46, test_ppl -" % (inside[1], stage)]
