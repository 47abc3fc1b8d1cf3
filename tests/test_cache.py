"""The on-disk kernel cache trusts nothing it did not write (issue "faults
and security", cache points 1-5): a directory another user can write is not
used, files are created exclusively and never through symbolic links, a
digest is checked before a byte is loaded, a failed load does not disable
the kernel, keys cover the built library, and the size is bounded.

Each test runs a small program under grumpy in a fresh process and compares
its printed sum with the one NumPy prints."""

import glob
import hashlib
import os
import random
import struct
import subprocess
import sys
import textwrap

import pytest
import gpcheck

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

PROGRAM = """
    import numpy as np, grumpy
    a = np.linspace(0, 1, 1_000_000)
    print(repr(float((np.sin(a) * 2 + a).sum())))
    s = grumpy.stats()
    print(s["kernels_compiled"], s["disk_cache_hits"], s["jit_failures"])
"""


def run(cache_dir, grumpy_on=True, **extra):
    env = gpcheck.subprocess_env()
    env.update(PYTHONPATH=ROOT, GRUMPY_CACHE_DIR=str(cache_dir), **extra)
    path = os.path.join(ROOT, "build", f"_cache_{os.getpid()}.py")
    with open(path, "w") as f:
        f.write(textwrap.dedent(PROGRAM if grumpy_on else PROGRAM.split("    s = grumpy")[0]))
    cmd = [sys.executable, "-m", "grumpy.run", path] if grumpy_on else [sys.executable, path]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.split("\n")
    counts = tuple(map(int, lines[1].split())) if grumpy_on else None
    return Close(lines[0]), counts, r.stderr


@pytest.fixture(scope="module")
def expected(tmp_path_factory):
    return run(tmp_path_factory.mktemp("plain"), grumpy_on=False)[0]


class Close(str):
    """The printed sum: equal to NumPy's within the semantics contract
    (libmvec's sin within a few ULP, a fused sum's pairwise blocks)."""

    def __eq__(self, other):
        return abs(float(self) - float(other)) <= 1e-12 * abs(float(other))

    __hash__ = str.__hash__


def entries(d):
    return sorted(glob.glob(os.path.join(d, "*.gpk")))


def test_second_process_loads_what_the_first_stored(tmp_path, expected):
    d = tmp_path / "c"
    assert run(d)[:2] == (expected, (1, 0, 0))
    assert run(d)[:2] == (expected, (0, 1, 0))
    (f,) = entries(d)
    assert os.stat(d).st_mode & 0o777 == 0o700
    assert os.stat(f).st_mode & 0o777 == 0o600
    assert not glob.glob(os.path.join(d, ".tmp.*"))


@pytest.mark.parametrize("mode", [0o777, 0o770, 0o722])
def test_a_directory_others_can_write_is_not_used(tmp_path, expected, mode):
    d = tmp_path / "shared"
    d.mkdir()
    os.chmod(d, mode)
    out, counts, err = run(d)
    assert out == expected and counts == (1, 0, 0)
    assert "kernel cache off" in err and "writable by group or others" in err
    assert entries(d) == []
    # the same directory, made private, is used
    os.chmod(d, 0o700)
    assert run(d)[1] == (1, 0, 0) and len(entries(d)) == 1


@pytest.mark.skipif(os.geteuid() != 0, reason="changing a directory's owner needs root")
def test_a_directory_another_user_owns_is_not_used(tmp_path, expected):
    d = tmp_path / "theirs"
    d.mkdir(mode=0o700)
    os.chown(d, 65534, 65534)
    out, counts, err = run(d)
    assert out == expected and counts == (1, 0, 0)
    assert "owned by uid 65534" in err
    assert entries(d) == []


def test_a_symbolic_link_as_directory_is_not_used(tmp_path, expected):
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    link = tmp_path / "link"
    link.symlink_to(real)
    out, counts, err = run(link)
    assert out == expected and counts == (1, 0, 0)
    assert "kernel cache off" in err and entries(real) == []


def test_a_planted_symbolic_link_is_never_followed(tmp_path, expected):
    d = tmp_path / "c"
    run(d)
    (f,) = entries(d)
    victim = tmp_path / "victim"
    victim.write_bytes(open(f, "rb").read())  # a valid entry, behind a link
    os.unlink(f)
    os.symlink(victim, f)
    before = victim.read_bytes()
    out, counts, _ = run(d)
    assert out == expected and counts == (1, 0, 0)  # not loaded through the link
    assert victim.read_bytes() == before  # not written through it
    assert not os.path.islink(f) and open(f, "rb").read() != b""


@pytest.mark.skipif(os.geteuid() != 0, reason="changing a file's owner needs root")
def test_an_entry_another_user_owns_is_not_loaded(tmp_path, expected):
    d = tmp_path / "c"
    run(d)
    (f,) = entries(d)
    os.chown(f, 65534, 65534)
    out, counts, _ = run(d)
    assert out == expected and counts == (1, 0, 0)
    assert os.stat(f).st_uid == os.geteuid()  # replaced by our own


def test_flipped_bytes_are_a_miss_and_the_entry_is_rewritten(tmp_path, expected):
    """Four random bytes flipped (the key intact or not), ten times: the
    digest finds every one; before it, 13 of 40 runs crashed with SIGSEGV,
    3 with SIGILL and 2 printed wrong numbers."""
    d = tmp_path / "c"
    run(d)
    (f,) = entries(d)
    good = open(f, "rb").read()
    rng = random.Random(7)
    for _ in range(10):
        b = bytearray(good)
        for _ in range(4):
            b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
        open(f, "wb").write(bytes(b))
        out, counts, _ = run(d)
        assert out == expected and counts == (1, 0, 0)
        assert open(f, "rb").read() == good  # rewritten by the recompile


def reseal(raw):
    """An entry's bytes with its digest recomputed (what a writer of the
    directory could do)."""
    return raw[:8] + hashlib.sha256(raw[40:]).digest() + raw[40:]


def test_an_object_that_fails_to_load_does_not_disable_its_kernel(tmp_path, expected):
    """A well-formed entry whose object defines the kernel but cannot be
    linked (an external symbol renamed): before, the recompile failed with
    "Duplicate definition of symbol" and the kernel was lost for good."""
    d = tmp_path / "c"
    run(d)
    (f,) = entries(d)
    good = open(f, "rb").read()
    klen = struct.unpack("<Q", good[40:48])[0]
    obj_at = 56 + klen
    obj = good[obj_at:]
    names = [n for n in (b"_ZGVdN4v_sin", b"_ZGVbN2v_sin", b"_ZGVeN8v_sin", b"sin\0") if n in obj]
    assert names, "the kernel's object calls no sin"
    broken = obj.replace(names[0], b"x" + names[0][1:])
    open(f, "wb").write(reseal(good[:obj_at] + broken))
    out, counts, _ = run(d)
    assert out == expected and counts == (1, 0, 0)
    assert open(f, "rb").read() == good


def test_the_key_covers_the_built_library(tmp_path):
    """Keys held a compile timestamp of one source file: a change elsewhere
    in the code generator reused stale objects."""
    d = tmp_path / "c"
    run(d)
    (f,) = entries(d)
    # the code generator's library, then the extension that plans programs
    (gen,) = glob.glob(os.path.join(ROOT, "grumpy", "_grumpy_jit*.so"))
    (ext,) = set(glob.glob(os.path.join(ROOT, "grumpy", "_grumpy*.so"))) - {gen}
    digest = hashlib.sha256(open(gen, "rb").read() + open(ext, "rb").read()).hexdigest().encode()
    assert b"library " + digest in open(f, "rb").read()


def test_least_recently_used_entries_go_first(tmp_path, expected):
    d = tmp_path / "c"
    d.mkdir(mode=0o700)
    old, recent = d / ("0" * 32 + ".gpk"), d / ("1" * 32 + ".gpk")
    for p, age in ((old, 3600), (recent, 60)):
        p.write_bytes(b"x" * 600_000)
        t = os.stat(p).st_mtime - age
        os.utime(p, (t, t))
    run(d, GRUMPY_CACHE_MAX_MB="1")
    left = entries(d)
    assert str(old) not in left and str(recent) in left and len(left) == 2
    run(tmp_path / "none", GRUMPY_CACHE_MAX_MB="0")
    assert entries(tmp_path / "none") == []


def test_a_store_lists_the_directory_only_when_its_running_total_passes_the_bound(tmp_path, expected):
    """Each store listed the whole directory (an fstatat per entry: 0.1 s
    a kernel with a user's 41663 entries).  Now .usage keeps the entries'
    bytes as last listed plus the stores since, and a store lists (and
    evicts) only when that total passes the bound or every 256 stores."""
    d = tmp_path / "c"
    mib = 1 << 20

    def usage():
        return struct.unpack("=QQ", (d / ".usage").read_bytes())

    assert run(d, GRUMPY_CACHE_MAX_MB="1")[:2] == (expected, (1, 0, 0))
    (f,) = entries(d)
    size = os.stat(f).st_size
    assert usage() == (size, 0)  # a new .usage: the entries were listed
    os.unlink(f)  # so that the next run compiles and stores again
    planted = []
    for k, age in ((0, 3600), (1, 1800)):
        p = d / (str(k) * 32 + ".gpk")
        p.write_bytes(b"x" * 600_000)
        t = os.stat(p).st_mtime - age
        os.utime(p, (t, t))
        planted.append(str(p))
    assert run(d, GRUMPY_CACHE_MAX_MB="1")[:2] == (expected, (1, 0, 0))
    # the directory holds more than 1 MiB, but its running total does not
    # say so: nothing was listed, nothing removed
    assert usage() == (2 * size, 1)
    assert len(entries(d)) == 3
    # the kernel's own entry (its name, a hash, may sort between the planted ones)
    os.unlink(next(e for e in entries(d) if e not in planted))
    (d / ".usage").write_bytes(struct.pack("=QQ", mib - size // 2, 7))
    assert run(d, GRUMPY_CACHE_MAX_MB="1")[:2] == (expected, (1, 0, 0))
    # past the bound: listed, the least recently used planted file removed
    left = entries(d)
    assert planted[0] not in left and planted[1] in left and len(left) == 2
    assert usage() == (600_000 + size, 0)
    # and every 256th store lists, whatever the total says
    os.unlink([e for e in left if e != planted[1]][0])
    (d / ".usage").write_bytes(struct.pack("=QQ", 0, 255))
    assert run(d)[:2] == (expected, (1, 0, 0))
    assert usage() == (600_000 + size, 0)
    # a total that would wrap (a corrupt .usage) is listed again too
    os.unlink([e for e in entries(d) if e != planted[1]][0])
    (d / ".usage").write_bytes(struct.pack("=QQ", (1 << 64) - 5, 3))
    assert run(d)[:2] == (expected, (1, 0, 0))
    assert usage() == (600_000 + size, 0)


def test_a_full_cache_is_emptied_to_seven_eighths_of_its_bound(tmp_path, expected):
    """Removing entries only down to the bound left the running total an
    entry below it, so the next store listed the directory again."""
    d = tmp_path / "c"
    d.mkdir(mode=0o700)
    files = []
    for k, (size, age) in enumerate(((100_000, 3600), (100_000, 1800), (900_000, 60))):
        p = d / (str(k) * 32 + ".gpk")
        p.write_bytes(b"x" * size)
        t = os.stat(p).st_mtime - age
        os.utime(p, (t, t))
        files.append(str(p))
    assert run(d, GRUMPY_CACHE_MAX_MB="1")[:2] == (expected, (1, 0, 0))
    left = entries(d)
    # 1.1 MB + the new entry: down to the bound the oldest alone would go;
    # down to 7/8 of it (917504 bytes) the two oldest
    assert files[0] not in left and files[1] not in left and files[2] in left and len(left) == 2
    assert struct.unpack("=QQ", (d / ".usage").read_bytes())[0] <= (1 << 20) * 7 // 8


def test_a_usage_file_that_is_not_ours_is_not_used(tmp_path, expected):
    d = tmp_path / "c"
    d.mkdir(mode=0o700)
    (d / "target").write_bytes(struct.pack("=QQ", 0, 0))
    os.symlink(d / "target", d / ".usage")
    old = d / ("0" * 32 + ".gpk")
    old.write_bytes(b"x" * 1_100_000)
    t = os.stat(old).st_mtime - 3600
    os.utime(old, (t, t))
    assert run(d, GRUMPY_CACHE_MAX_MB="1")[:2] == (expected, (1, 0, 0))
    # the link is not followed (the store listed the entries, as before)
    assert (d / "target").read_bytes() == struct.pack("=QQ", 0, 0)
    assert str(old) not in entries(d) and len(entries(d)) == 1


def test_python_m_grumpy_cache_info_and_clear(tmp_path):
    d = tmp_path / "c"
    run(d)
    env = gpcheck.subprocess_env()
    env.update(PYTHONPATH=ROOT, GRUMPY_CACHE_DIR=str(d))

    def cache(*args):
        return subprocess.run([sys.executable, "-m", "grumpy.cache", *args], env=env, capture_output=True,
                              text=True, timeout=60)

    info = cache("info")
    assert info.returncode == 0 and f"directory: {d}" in info.stdout and "entries:   1" in info.stdout
    (open(d / ".tmp.leftover", "w")).close()
    cleared = cache("clear")
    assert cleared.returncode == 0 and "removed 2 files" in cleared.stdout
    assert os.listdir(d) == []
    assert cache("bogus").returncode == 2


LOADER_PROGRAM = """
    import numpy as np, grumpy
    a = np.linspace(0, 1, 1_000_000)
    b = np.linspace(-3, 3, 1_000_000).astype(np.float32)
    r = [float((np.sin(a) * 2 + a).sum()), float(np.exp(-a).max()), float((a % 0.3).sum()),
         float(np.cumsum(a * a)[-1]), int((a > 0.5).sum()), float(np.tanh(b).sum()), float(np.fmod(b, 0.7).min())]
    print(repr(r))
    s = grumpy.stats()
    print(s["kernels_compiled"], s["disk_cache_hits"], s["disk_objects_loaded"], s["jit_failures"])
    print(any("libLLVM" in line for line in open("/proc/self/maps")))
"""


def test_a_process_whose_kernels_are_cached_loads_them_without_llvm(tmp_path):
    """Issue "never slower", start-up: the second process finds every
    kernel in the disk cache and loads the objects itself (core/objload.c:
    the code generator's library, LLVM, is no longer on the first kernel's
    path); the loaded machine code is the compiled one, so the numbers are
    the first process's bit for bit (libm's fmod, libmvec's sin, exp and
    tanh through the loader's stubs, constants through PC-relative
    relocations, a pairwise sum, a scan).  The second process never maps
    LLVM (~47 MiB, ~20 ms of CPU): the library loads at a disk-cache miss."""
    env = gpcheck.subprocess_env()
    env.update(PYTHONPATH=ROOT, GRUMPY_CACHE_DIR=str(tmp_path / "c"))
    path = tmp_path / "prog.py"
    path.write_text(textwrap.dedent(LOADER_PROGRAM))
    outs = []
    for _ in range(2):
        r = subprocess.run([sys.executable, "-m", "grumpy.run", str(path)], env=env, capture_output=True, text=True,
                           timeout=300)
        assert r.returncode == 0, r.stderr
        outs.append(r.stdout.split("\n"))
    (v1, c1), (v2, c2) = [(o[0], tuple(map(int, o[1].split()))) for o in outs]
    assert v1 == v2
    n = c1[0]
    assert n >= 6 and c1 == (n, 0, 0, 0)
    assert c2 == (0, n, n, 0)
    assert [outs[0][2], outs[1][2]] == ["True", "False"]
