"""TF1's tf.gfile (staticgrad/platform/gfile.py), as TF1 programs use it for their folders."""

import pytest

import staticgrad as sg


def test_the_log_folder_idiom(tmp_path):
    log_dir = str(tmp_path / "logs" / "run")
    assert not sg.gfile.Exists(log_dir)
    sg.gfile.MakeDirs(log_dir)
    sg.gfile.MakeDirs(log_dir)  # already there: fine
    with sg.gfile.GFile(log_dir + "/notes.txt", "w") as f:
        f.write("step 1\n")
    assert sg.gfile.Exists(log_dir) and sg.gfile.IsDirectory(log_dir)
    assert sg.gfile.ListDirectory(log_dir) == ["notes.txt"]
    assert sg.gfile.Glob(log_dir + "/*.txt") == [log_dir + "/notes.txt"]
    assert sg.gfile.Stat(log_dir + "/notes.txt").length == 7
    with sg.gfile.Open(log_dir + "/notes.txt") as f:
        assert f.read() == "step 1\n"
    sg.gfile.DeleteRecursively(str(tmp_path / "logs"))
    assert not sg.gfile.Exists(str(tmp_path / "logs"))


def test_files_and_walk(tmp_path):
    sg.gfile.MkDir(str(tmp_path / "a"))
    with pytest.raises(sg.errors.AlreadyExistsError):
        sg.gfile.MkDir(str(tmp_path / "a"))
    with sg.gfile.GFile(str(tmp_path / "a" / "x.bin"), "wb") as f:
        f.write(b"\x00\x01")
    assert sg.gfile.GFile(str(tmp_path / "a" / "x.bin"), "rb").size() == 2
    sg.gfile.Copy(str(tmp_path / "a" / "x.bin"), str(tmp_path / "y.bin"))
    with pytest.raises(sg.errors.AlreadyExistsError):
        sg.gfile.Copy(str(tmp_path / "a" / "x.bin"), str(tmp_path / "y.bin"))
    sg.gfile.Rename(str(tmp_path / "y.bin"), str(tmp_path / "a" / "x.bin"), overwrite=True)
    assert list(sg.gfile.Walk(str(tmp_path))) == [(str(tmp_path), ["a"], []),
                                                  (str(tmp_path / "a"), [], ["x.bin"])]
    sg.gfile.Remove(str(tmp_path / "a" / "x.bin"))
    assert sg.gfile.ListDirectory(str(tmp_path / "a")) == []


@pytest.mark.parametrize("call", [
    lambda p: sg.gfile.DeleteRecursively(p), lambda p: sg.gfile.Remove(p),
    lambda p: sg.gfile.GFile(p), lambda p: sg.gfile.ListDirectory(p),
    lambda p: sg.gfile.Stat(p), lambda p: sg.gfile.Rename(p, p + "2")])
def test_what_finds_nothing_raises_not_found_naming_the_path(tmp_path, call):
    missing = str(tmp_path / "missing")
    with pytest.raises(sg.errors.NotFoundError, match="missing"):
        call(missing)

