"""TF1's command-line flags (staticgrad/platform/flags.py) and sg.app.run, as TF1 programs
use them."""

import subprocess
import sys
import textwrap

import pytest

import staticgrad as sg
from staticgrad.platform.flags import FlagsError, FlagValues


@pytest.fixture
def flags():
    values = FlagValues()
    sg.flags.DEFINE_string("data_dir", "/tmp/data", "where", flag_values=values)
    sg.flags.DEFINE_integer("batch_size", 100, "per step", flag_values=values)
    sg.flags.DEFINE_float("learning_rate", 0.01, "rate", flag_values=values)
    sg.flags.DEFINE_boolean("fake_data", False, "fake", flag_values=values)
    sg.flags.DEFINE_bool("verbose", True, "chatty", flag_values=values)
    sg.flags.DEFINE_list("layers", "64,32", "sizes", flag_values=values)
    return values


def test_flags_take_every_spelling_tf1_programs_use(flags):
    rest = flags(["prog", "--batch_size=32", "-learning_rate", "0.5", "--fake_data",
                  "--noverbose", "input.txt", "--layers=8,4", "--other=1", "--", "--batch_size=1"])
    assert rest == ["prog", "input.txt", "--other=1", "--batch_size=1"]
    assert (flags.batch_size, flags.learning_rate, flags.fake_data, flags.verbose) == \
        (32, 0.5, True, False)
    assert flags.data_dir == "/tmp/data" and flags.layers == ["8", "4"]
    flags.batch_size = 7  # (a program may set one)
    assert flags.flag_values_dict()["batch_size"] == 7 and "data_dir" in flags


def test_bad_flags_are_errors_naming_the_flag(flags):
    with pytest.raises(FlagsError, match=r"flag --batch_size: invalid literal .* integer flag"):
        flags(["prog", "--batch_size=many"])
    with pytest.raises(FlagsError, match=r"flag --fake_data: 'maybe' is not a boolean"):
        flags(["prog", "--fake_data=maybe"])
    with pytest.raises(FlagsError, match=r"flag --data_dir needs a value"):
        flags(["prog", "--data_dir"])
    with pytest.raises(FlagsError, match=r"unknown command-line flag '--nope'"):
        flags(["prog", "--nope"], known_only=False)
    with pytest.raises(FlagsError, match=r"flag --batch_size is defined twice"):
        sg.flags.DEFINE_integer("batch_size", 1, "again", flag_values=flags)
    with pytest.raises(AttributeError, match=r"no flag --epochs is defined"):
        flags.epochs  # noqa: B018


def test_app_run_parses_the_flags_and_exits_with_what_main_returns(tmp_path):
    program = tmp_path / "prog.py"
    program.write_text(textwrap.dedent("""
        import staticgrad as tf
        tf.app.flags.DEFINE_integer("steps", 3, "how many")
        FLAGS = tf.app.flags.FLAGS

        def main(argv):
            tf.logging.set_verbosity(tf.logging.INFO)
            tf.logging.info("steps=%d argv=%s", FLAGS.steps, argv[1:])
            return 3 if FLAGS.steps == 5 else 0

        if __name__ == "__main__":
            tf.app.run()
    """))
    done = subprocess.run([sys.executable, str(program), "--steps=5", "left"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 3, done.stderr
    assert "INFO:tensorflow:steps=5 argv=['left']" in done.stderr  # (as TF1 prints it)
