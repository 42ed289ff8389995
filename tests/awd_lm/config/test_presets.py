"""The presets and the parameter checks of a run: a parameter's value
checked and named, an unknown key named with the closest first, the
quantized phase's parameters."""
import pytest

from tf1_awd_sparse.awd_lm.config import presets
from tf1_awd_sparse.awd_lm.config.params import as_params


def test_quant_phase_params_do_not_depend_on_compression():
    """A --quant run resumes under --compress (the quantized model is the
    same): its parameters carry no compression setting."""
    base = dict(presets.params_for("demo", "awd"), quant=True)
    plain = presets.split_quant(as_params(base))
    compressed = presets.split_quant(as_params(dict(
        base, compress="l0", target_sparsity=0.8, finetune_epochs=3)))
    assert plain == compressed
    assert not set(presets.COMPRESS_KEYS) & set(plain[1].to_flat())
    # quant_epochs epochs at quant_lr: lr / 4 when it is None.
    assert plain[1].stopping.max_epochs == base["quant_epochs"]
    assert plain[1].optimization.lr == plain[1].quantization.quant_lr == \
        base["lr"] / 4.0


def test_presets_name_an_unknown_key_first():
    with pytest.raises(ValueError, match=r"^override 'lrr': 'lrr' is not a "
                       r"parameter; did you mean 'lr'"):
        presets.params_for("demo", "awd", {"lrr": 1.0})
    with pytest.raises(ValueError, match=r"^--x: 'zzzz' is not a parameter;"):
        presets.parse_value("zzzz", "1", "--x")


def test_bad_values_are_named_first():
    with pytest.raises(ValueError, match="^override 'lr'"):
        presets.params_for("demo", "awd", {"lr": -1.0})
    with pytest.raises(ValueError, match="^--x must be true or false"):
        presets.parse_value("variable_bptt", "maybe", "--x")
    with pytest.raises(ValueError, match=r"^params\['quant_lr'\]"):
        as_params(dict(presets.params_for("demo", "awd"), quant=True,
                       quant_lr=-1.0))
    # Bit widths are checked before the float phase trains, not when the
    # quantized cells are built after it.
    for name, bits in (("weight_bits", 9), ("activation_bits", 1)):
        with pytest.raises(ValueError, match="^override '%s'" % name):
            presets.params_for("demo", "awd", {name: bits})
