"""Charts come back as files (D3, D16): matplotlib's backend in the snippet sandbox.

Installed in the data image's site-packages as `sandboxd_figures` (the zygote runs with -I, so only the
interpreter's own site directories are importable) and named by MPLBACKEND=module://sandboxd_figures in the
snippet's environment. It draws with Agg, so nothing waits for a display; `plt.show()` writes every open figure
to the working directory as `figure-<n>.png` and closes it, as a notebook shows and forgets it; the zygote calls
`save_open_figures` when a run ends, for the figures left open. Numbers go on across a session's runs and skip a
name the snippet already used, so no picture overwrites another. The run's file caps hold: a figure that does
not fit what is left of them is left out, with a line on stderr, and the rest are closed unsaved.
"""
import io
import os
import sys

from matplotlib.backend_bases import FigureManagerBase
from matplotlib.backends.backend_agg import FigureCanvasAgg

FigureCanvas = FigureCanvasAgg
FigureManager = FigureManagerBase

_saved = 0


def show(*args, **kwargs):
    """plt.show(): the open figures become files (the arguments, such as block=, change nothing here)."""
    save_open_figures()


def save_open_figures():
    """Write each open figure as the next free figure-<n>.png, within the run's file caps; close them all."""
    import matplotlib.pyplot as pyplot

    max_bytes = int(os.environ.get("SANDBOX_MAX_FILES_BYTES", 8388608))
    max_files = int(os.environ.get("SANDBOX_MAX_FILES", 100))
    used_bytes, used_files = _files_so_far()
    past_the_count = []
    for number in pyplot.get_fignums():
        figure = pyplot.figure(number)
        if used_files >= max_files:
            past_the_count.append(number)
        else:
            png = io.BytesIO()
            figure.savefig(png, format="png")
            data = png.getvalue()
            if used_bytes + len(data) > max_bytes:
                _left_out(number, f"its {len(data)} bytes do not fit the run's {max_bytes} bytes of files")
            else:
                _write(_next_name(), data)
                used_bytes += len(data)
                used_files += 1
        pyplot.close(figure)
    if past_the_count:
        numbers = f"{past_the_count[0]}" if len(past_the_count) == 1 else f"{past_the_count[0]} to {past_the_count[-1]}"
        _left_out(numbers, f"the run's files are at their cap of {max_files}", len(past_the_count))


def _files_so_far():
    """Bytes and count of the regular files in the working directory (what the run returns besides)."""
    total = count = 0
    for directory, _subdirectories, names in os.walk("."):
        for name in names:
            path = os.path.join(directory, name)
            if os.path.isfile(path) and not os.path.islink(path):
                total += os.path.getsize(path)
                count += 1
    return total, count


def _next_name():
    global _saved
    while True:
        _saved += 1
        name = f"figure-{_saved}.png"
        if not os.path.lexists(name):
            return name


def _write(name, data):
    fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    with open(fd, "wb") as file:
        file.write(data)


def _left_out(numbers, why, count=1):
    what = f"figure {numbers} was" if count == 1 else f"{count} figures ({numbers}) were"
    print(f"sandboxd: {what} left out: {why}", file=sys.stderr)
