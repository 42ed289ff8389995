"""The registry of parameters (awd_lm.config.registry): each entry is
consistent with itself, and the tables made from it say what the
entries say (the phases strip what a float phase must not record, the
flags are the entries', the presets name only parameters)."""
import pytest

from tf1_awd_sparse.awd_lm.config import params as P
from tf1_awd_sparse.awd_lm.config import presets, registry
from tf1_awd_sparse.awd_lm.programs import train as train_program


@pytest.mark.parametrize("entry", registry.PARAMETERS,
                         ids=lambda e: e.name)
def test_each_entry_is_whole(entry):
    assert entry.phase in registry.PHASES
    assert entry.flag in registry.FLAG_KINDS
    assert entry.section in P.SECTIONS
    assert all(rule in registry.RULES for rule in entry.used)
    # A preset's default passes its own check (the programs' None ones
    # are set before use) and is of its text type.
    if entry.preset:
        assert entry.check(entry.default, entry.name) == entry.default
    assert entry.default is None or isinstance(entry.default, entry.type)
    if entry.flag == "switch":
        assert entry.type is bool and entry.default is False
    if entry.flag == "choice":
        assert entry.default in entry.choices
    if entry.flag and entry.type is not bool and entry.default is not None:
        # A default written as text reads back through the flag's path.
        assert presets.parse_value(entry.name, str(entry.default),
                                   "--x") == entry.default
    # A flag of the pipeline's stages never reaches a user.
    assert (entry.section == "stage") <= (entry.flag is None)


def test_names_are_unique_and_the_order_is_config_jsons():
    names = [p.name for p in registry.PARAMETERS]
    assert len(set(names)) == len(names)
    assert list(P._FLAT_ORDER) == names
    assert list(presets.DEFAULTS) == [p.name for p in registry.PARAMETERS
                                      if p.preset]


def test_presets_name_only_parameters_a_preset_holds():
    for values in list(registry.PRESETS.values()) + list(
            registry.MODEL_OVERRIDES.values()):
        for key, value in values.items():
            assert registry.BY_NAME[key].preset
            assert registry.BY_NAME[key].check(value, key) == value


def test_a_float_phase_records_no_later_phases_key():
    flat = dict(presets.params_for("demo", "awd"), quant=True,
                compress="magnitude", table_rank=4)
    float_phase, quant_phase = (p.to_flat() for p in presets.split_quant(
        P.as_params(flat)))
    later = [p.name for p in registry.PARAMETERS if p.phase != "float"]
    assert not set(later) & set(float_phase)
    assert set(float_phase) | set(later) >= set(flat)
    # The quantization-aware phase keeps its own keys, not the pipeline's.
    assert not set(registry.keys(phase="compress")) & set(quant_phase)
    assert set(registry.keys(phase="quant")) <= set(quant_phase)


def test_the_flags_are_the_entries():
    parser_help = []
    args = train_program.parse_args([])
    for entry in registry.PARAMETERS:
        if entry.flag is None:
            assert not hasattr(args, entry.name) or entry.name in (
                "model", "preset")
            continue
        assert getattr(args, entry.name) is None   # not given
        if entry.help:
            parser_help.append(entry.name)
            assert train_program.HELP[entry.name] == entry.help
    assert set(train_program.HELP) == set(parser_help)
    switches = registry.keys(flag="switch")
    args = train_program.parse_args(
        ["--" + k.replace("_", "-") for k in switches]
        + ["--sparsity", "l0", "--bptt", "7"])
    assert all(getattr(args, k) is True for k in switches)
    assert args.sparsity == "l0" and args.bptt == 7


def test_an_unknown_phase_or_flag_kind_is_seen():
    """The entry test above can fail: a phase outside PHASES is caught."""
    bad = registry.PARAMETERS[0]._replace(phase="later")
    with pytest.raises(AssertionError):
        test_each_entry_is_whole(bad)
