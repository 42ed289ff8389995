"""Flags that would do nothing are refused by the distributed programs
(issue 54, item 6): estimator and monitored end with status 2 and one line
naming the flag and what it needs, and that line names only flags the
program has (they named --quant and --compress, which are train's).
Checked on the parsed flags and the parameters, in this process: nothing
is trained or read."""
import pytest

from tf1_awd_sparse.awd_lm.config import presets
from tf1_awd_sparse.awd_lm.distributed import cli
from tf1_awd_sparse.awd_lm.programs import estimator, monitored

from support.lm import names_only_its_flags, one_error_line, write_ptb
from support.versions import needs_estimator

#: The distributed programs (estimator where tf.estimator exists).
DISTRIBUTED = [pytest.param(estimator, marks=needs_estimator,
                            id="estimator"),
               pytest.param(monitored, id="monitored")]

#: A tiny model on a tiny embedded corpus (its sizes: what the loop uses).
TINY = ("emb_size=4,hidden_size=8,num_layers=2,eval_batch_size=3,bptt=5,"
        "hmm_vocab=20,hmm_states=2,hmm_train=600,hmm_valid=200,"
        "hmm_test=100")


#: (--hparams given besides TINY, the key named, what the line needs).
UNUSED_HPARAMS = [
    ("optimizer=ntasgd", "optimizer", "awd-lm train"),
    ("nonmono=3", "nonmono", "awd-lm train"),
    ("variable_bptt=false", "variable_bptt", "awd-lm train"),
    ("max_epochs=3", "max_epochs", "awd-lm train"),
    ("patience=2", "patience", "awd-lm train"),
    ("select_from_epoch=2", "select_from_epoch", "awd-lm train"),
    ("quant=true,quant_epochs=2", "quant_epochs", "awd-lm train"),
    ("quant=true,quant_lr=1", "quant_lr", "awd-lm train"),
    ("compress=magnitude", "compress", "awd-lm train"),
    ("finetune_epochs=2", "finetune_epochs", "awd-lm train"),
    ("distill_weight=0", "distill_weight", "awd-lm train"),
    ("quant_delay=5", "quant_delay", "--hparams quant=true"),
    ("weight_bits=4", "weight_bits", "--hparams quant=true"),
    ("sparsity_weight=0.1", "sparsity_weight", "--hparams sparsity"),
    ("pruning_end_step=5", "pruning_end_step",
     "--hparams pruning=magnitude"),
    ("target_sparsity=0.5", "target_sparsity",
     "--hparams pruning=magnitude"),
]


@pytest.mark.parametrize("program", DISTRIBUTED)
@pytest.mark.parametrize("hparams, key, needs", UNUSED_HPARAMS,
                         ids=[u[1] for u in UNUSED_HPARAMS])
def test_distributed_refuses_a_key_its_loop_never_reads(tmp_path, program,
                                                        hparams, key, needs):
    args = program.parse_args(["--model-dir", str(tmp_path / "m"),
                               "--hparams", TINY + "," + hparams])
    with pytest.raises(ValueError) as refused:
        cli.command_params(args)
    line = str(refused.value)
    assert line.startswith("--hparams %s has no effect here: it needs %s"
                           % (key, needs)), line
    names_only_its_flags(line, program)
    assert not (tmp_path / "m").exists()


@pytest.mark.parametrize("program", DISTRIBUTED)
def test_distributed_accepts_what_its_loop_reads(tmp_path, program):
    """Magnitude pruning's target and the quantization delay are read by
    the distributed loop (train's table refused the first, naming
    --compress)."""
    for hparams in ("pruning=magnitude,target_sparsity=0.5,pruning_block=4",
                    "quant=true,quant_delay=5,weight_bits=4"):
        args = program.parse_args(["--model-dir", str(tmp_path / "m"),
                                   "--hparams", TINY + "," + hparams])
        params, _ = cli.command_params(args)
        for item in hparams.split(","):
            key, value = item.split("=")
            assert params.to_flat()[key] == presets.parse_value(
                key, value, key)


@pytest.mark.parametrize("program", DISTRIBUTED)
def test_evaluate_only_refuses_a_key_of_training(tmp_path, program):
    args = program.parse_args(["--model-dir", str(tmp_path / "m"),
                               "--evaluate-only", "--hparams",
                               TINY + ",lr=3"])
    with pytest.raises(ValueError, match="^--hparams lr has no effect "
                       "here: it needs training: --evaluate-only"):
        cli.command_params(args)


@pytest.mark.parametrize("program", DISTRIBUTED)
def test_an_hmm_size_with_a_data_dir_is_refused(tmp_path, program):
    write_ptb(str(tmp_path))
    args = program.parse_args(["--model-dir", str(tmp_path / "m"),
                               "--data-dir", str(tmp_path), "--hparams",
                               "hmm_vocab=40"])
    with pytest.raises(ValueError, match="^--hparams hmm_vocab has no "
                       "effect here: it needs the embedded corpus"):
        cli.command_params(args)


@pytest.mark.parametrize("program", DISTRIBUTED)
def test_use_vd_of_the_plain_model_is_refused(tmp_path, program):
    args = program.parse_args(["--model-dir", str(tmp_path / "m"),
                               "--model", "plain", "--use-vd", "--hparams",
                               TINY])
    with pytest.raises(ValueError, match="^--use-vd has no effect here: "
                       "it needs --model awd"):
        cli.command_params(args)


#: (flags, the flag named, what it needs).
UNUSED_FLAGS = [
    (["--num-devices", "3"], "--num-devices", "--distribute mirrored"),
    (["--evaluate-only", "--train-steps", "5"], "--train-steps",
     "--evaluate-only trains nothing"),
    (["--evaluate-only", "--save-steps", "5"], "--save-steps",
     "--evaluate-only trains nothing"),
    (["--evaluate-only", "--use-vd"], "--use-vd", "no dropout masks"),
    (["--evaluate-only", "--distribute", "mirrored"], "--distribute",
     "one device"),
    (["--distribute", "mirrored", "--barrier-timeout", "9"],
     "--barrier-timeout", "TF_CONFIG cluster"),
]


@pytest.mark.parametrize("program", DISTRIBUTED)
@pytest.mark.parametrize("flags, flag, needs", UNUSED_FLAGS,
                         ids=[u[1] for u in UNUSED_FLAGS])
def test_distributed_refuses_a_flag_the_others_leave_idle(
        capsys, program, flags, flag, needs):
    line = one_error_line(capsys, lambda: program.parse_args(
        ["--model-dir", "m"] + flags))
    assert line.startswith("error: %s has no effect here: it needs" % flag)
    assert needs in line, line
    names_only_its_flags(line, program)


@pytest.mark.parametrize("program", DISTRIBUTED)
def test_the_idle_flags_still_have_their_defaults(program):
    args = program.parse_args(["--model-dir", "m"])
    for dest, default in cli.FLAG_DEFAULTS.items():
        assert getattr(args, dest) == default
    args = program.parse_args(["--model-dir", "m", "--distribute",
                               "mirrored", "--num-devices", "3"])
    assert args.num_devices == 3
