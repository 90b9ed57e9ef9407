"""The charts' matplotlib: Agg, importable on a thread of its own."""

import subprocess
import sys


def test_pyplot_imported_on_a_thread_draws_without_a_display() -> None:
    """In a new interpreter (this one may hold pyplot already): the background import leaves
    pyplot imported on the Agg backend, and a figure renders to PNG bytes."""
    program = (
        "import io, sys\n"
        "from corpus_platform.base import charts\n"
        "assert 'matplotlib.pyplot' not in sys.modules\n"
        "charts.import_in_background().join(timeout=120)\n"
        "assert 'matplotlib.pyplot' in sys.modules\n"
        "plt = charts.pyplot()\n"
        "figure, axis = plt.subplots()\n"
        "axis.bar(['a'], [1])\n"
        "buffer = io.BytesIO()\n"
        "figure.savefig(buffer, format='png')\n"
        "print(plt.get_backend(), buffer.getvalue()[:8].hex())\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", program],
        capture_output=True,
        text=True,
        check=False,
        env={"PATH": "", "DISPLAY": "", "MPLBACKEND": ""},
    )
    assert done.returncode == 0, done.stderr
    backend, magic = done.stdout.split()
    assert backend.lower() == "agg"
    assert magic == "89504e470d0a1a0a"  # a PNG signature
