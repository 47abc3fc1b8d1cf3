"""Issue "faults and security" (the parts done): signals grumpy does not own
end the process as without grumpy; any thread count works."""

import os
import subprocess
import sys
import textwrap

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def run(src, grumpy_on, **extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRUMPY")}
    env.update(PYTHONPATH=ROOT, GRUMPY_CACHE_DIR="off", **extra)
    path = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"gp_faults_{os.getpid()}.py")
    with open(path, "w") as f:
        f.write(textwrap.dedent(src))
    cmd = [sys.executable, "-m", "grumpy.run", path] if grumpy_on else [sys.executable, path]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("sig", ["SIGSEGV", "SIGBUS"])
def test_a_fault_signal_sent_with_kill_ends_the_process_as_without_grumpy(sig):
    """The handler returned and the signal was lost (the process went on)."""
    src = f"""
        import os, signal, numpy as np
        a = np.ones(1_000_000) * 2.0   # a pending array: the guard is installed
        os.kill(os.getpid(), signal.{sig})
        print("survived")
    """
    plain, under = run(src, False), run(src, True)
    assert plain.returncode < 0
    assert under.returncode == plain.returncode
    assert "survived" not in under.stdout


@pytest.mark.parametrize("threads", [65, 200])
def test_more_threads_than_partial_slots(threads):
    """Reductions split a single row into 4 * threads parts that were
    written into 256-entry arrays (hangs, SIGSEGV, heap corruption)."""
    src = """
        import numpy as np
        x = np.copy(np.linspace(0.0, 1.0, 3_000_000))
        ix = np.copy(np.arange(3_000_000, dtype=np.int64))
        print(float((x * 2.0).sum()), int((ix * 3).sum()), float((x + 1.0).max()), int(np.argmax(x * 1.0)),
              float(np.asarray(np.cumsum(x * 1.0))[-1]), float(np.asarray((x * 1.0).reshape(1000, 3000).sum(axis=0))[7]))
    """
    plain, under = run(src, False), run(src, True, GRUMPY_THREADS=str(threads))
    assert under.returncode == 0, under.stderr[-2000:]
    got, want = under.stdout.split(), plain.stdout.split()
    assert got[1] == want[1] and got[2] == want[2] and got[3] == want[3]
    for g, w in zip(got, want):
        assert float(g) == pytest.approx(float(w), rel=1e-12)
