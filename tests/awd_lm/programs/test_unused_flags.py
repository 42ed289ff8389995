"""Flags that would do nothing are refused (issue 54, item 6): each ends
the program with status 2 and one line naming the flag and what it needs,
before anything is read or written; a misspelt flag names the closest
(item 8); every program's --help names itself."""
import subprocess
import sys

import pytest

from tf1_awd_sparse.awd_lm.programs import compress as compress_program
from tf1_awd_sparse.awd_lm.programs import main as awd_lm
from tf1_awd_sparse.awd_lm.programs import train as train_program

from support import ROOT
from support.lm import one_error_line

#: (flags, the flag named, what the line says it needs).
UNUSED = [
    (["--target-sparsity", "0.5"], "--target-sparsity", "--compress"),
    (["--pruning-block", "16"], "--pruning-block", "--compress"),
    (["--finetune-epochs", "2"], "--finetune-epochs", "--compress"),
    (["--small-dense"], "--small-dense", "--compress"),
    (["--quant-delay", "5"], "--quant-delay", "--quant or --compress"),
    (["--weight-bits", "4"], "--weight-bits", "--quant or --compress"),
    (["--pruning-end-step", "50"], "--pruning-end-step",
     "--pruning magnitude"),
    (["--sparsity-ramp-steps", "9"], "--sparsity-ramp-steps", "--sparsity"),
    (["--aux-lr-scale", "9"], "--aux-lr-scale", "--sparsity"),
    (["--optimizer", "sgd", "--nonmono", "3"], "--nonmono", "ntasgd"),
    (["--model", "plain", "--dropouth", "0.1"], "--dropouth", "model awd"),
    (["--compress", "l0", "--group-lasso", "1e-4"], "--group-lasso",
     "--compress magnitude"),
    (["--compress", "variational_dropout", "--table-rank", "8"],
     "--table-rank", "--compress magnitude"),
    (["--table-rank", "8"], "--table-rank", "--compress magnitude"),
    (["--compress", "magnitude", "--table-rank-rows", "3000"],
     "--table-rank-rows", "--table-rank r > 0"),
    (["--compress", "magnitude", "--compress-controller", "3"],
     "--compress-controller", "variational_dropout or l0"),
    (["--compress", "magnitude", "--distill-teacher", "reference"],
     "--distill-teacher", "--distill-weight"),
    (["--compress-out", "elsewhere"], "--compress-out", "--compress"),
]


@pytest.mark.parametrize("flags, flag, needs", UNUSED,
                         ids=[u[1] for u in UNUSED])
def test_train_refuses_a_flag_that_does_nothing(tmp_path, capsys, flags,
                                                flag, needs):
    out = tmp_path / "out"
    line = one_error_line(capsys, lambda: train_program.main(
        flags + ["--out", str(out)]))
    assert line.startswith("error: %s has no effect here" % flag), line
    assert needs in line
    assert not out.exists()


def test_a_flag_used_by_one_model_of_both_is_accepted():
    """--model both: the plain model ignores --dropouth, the awd one uses
    it (planned; nothing trained)."""
    from tf1_awd_sparse.awd_lm.training.plan import flag_name
    from tf1_awd_sparse.awd_lm.config import presets
    from tf1_awd_sparse.awd_lm.config.params import Params
    configs = [Params.for_preset("demo", m, {"dropouth": 0.1})
               for m in ("plain", "awd")]
    presets.check_unused(configs, {"dropouth"}, flag_name)
    with pytest.raises(ValueError, match="--dropouth has no effect"):
        presets.check_unused(configs[:1], {"dropouth"}, flag_name)


def test_an_hmm_size_with_a_data_dir_is_refused(tmp_path, capsys):
    from support.lm import write_ptb
    write_ptb(str(tmp_path))
    line = one_error_line(capsys, lambda: train_program.main(
        ["--data-dir", str(tmp_path), "--hmm-vocab", "40", "--out",
         str(tmp_path / "out")]))
    assert line.startswith("error: --hmm-vocab has no effect here")
    assert "--data-dir" in line


def test_the_command_refuses_target_sparsity_without_compress(tmp_path):
    """The issue's own case, through the installed command's module."""
    proc = subprocess.run(
        [sys.executable, "-m", "tf1_awd_sparse.awd_lm", "train",
         "--target-sparsity", "0.5", "--out", str(tmp_path / "out")],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        universal_newlines=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "error: --target-sparsity has no effect here: it needs --compress "
        "TECHNIQUES (the float run's --pruning magnitude keeps its "
        "default); leave it out"]
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("program", [train_program, compress_program])
def test_a_misspelt_flag_names_the_closest(capsys, program):
    line = one_error_line(capsys, lambda: program.main(
        ["--hiden-size", "3", "--compress", "l0"]))
    assert line == ("error: unrecognized arguments: --hiden-size 3 (did you "
                    "mean --hidden-size?)")


@pytest.mark.parametrize("name", sorted(awd_lm.PROGRAMS))
def test_each_programs_help_names_itself(capsys, name):
    """``awd-lm score --help`` said ``python -m ...awd_lm.score``; compress's
    described ``awd-lm train``."""
    with pytest.raises(SystemExit) as stop:
        awd_lm.main([name, "--help"])
    assert stop.value.code == 0
    text = capsys.readouterr().out
    assert text.startswith("usage: awd-lm %s " % name), text[:200]
    head = text.split("\n\n")[1] if "\n\n" in text else ""
    others = [p for p in awd_lm.PROGRAMS if p != name]
    assert not any(head.lstrip("`").startswith("awd-lm %s" % other)
                   for other in others), head[:200]
