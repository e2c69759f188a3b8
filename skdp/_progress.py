"""Progress output of the ``skdp`` command line (no dependency, no heavy import).

On a terminal the current step is one status line rewritten in place (``\\r``), with its
elapsed seconds and, for counted work, a textual bar; a permanent line (a table row, a
result) first erases it, so the screen keeps only the results.  Elsewhere (a pipe, a file,
a CI log) every step is a plain line flushed at once, and counted work prints a line at
its start and at every tenth of the way, so a log shows what ran and when.

>>> import io
>>> out = io.StringIO()
>>> progress = Progress(out, tty=False)
>>> progress.step("fitting a model ...")
>>> counter = progress.counter(20, "fits")
>>> for _ in range(20):
...     counter.tick()
>>> progress.line("done")
>>> lines = out.getvalue().splitlines()
>>> lines[0], lines[1][:14], lines[-2][:16], lines[-1]
('  fitting a model ...', '  fits: 0/20 (', '  fits: 20/20 (1', 'done')
"""

import sys
import threading
import time

__all__ = ["Progress"]

#: Seconds between two redraws of the status line on a terminal.
REDRAW = 0.5
BAR_WIDTH = 24


def _isatty(stream):
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):   # no isatty, or a closed stream
        return False


def _seconds(t):
    return f"{t:.0f} s" if t < 100 else f"{t / 60:.1f} min"


class Progress:
    """Status lines for a command writing its results to ``out``.

    Parameters
    ----------
    out : text stream
        Where results and progress go (flushed after every write).
    tty : bool, optional
        Rewrite one status line in place (default: ``out.isatty()``).
    """

    def __init__(self, out=None, *, tty=None):
        self.out = sys.stdout if out is None else out
        self.tty = _isatty(self.out) if tty is None else bool(tty)
        self._lock = threading.RLock()
        self._text = None            # the status on screen (terminal only)
        self._render = None          # callable -> status text, redrawn by the ticker
        self._width = 0
        self._ticker = None
        self._stop = threading.Event()
        self._columns = 79
        if self.tty:
            import shutil

            self._columns = max(20, shutil.get_terminal_size().columns - 1)

    # -- writing --------------------------------------------------------------------------

    def _write(self, text):
        self.out.write(text)
        self.out.flush()

    def _erase(self):
        if self._text is not None:
            self._write("\r" + " " * self._width + "\r")
            self._text = None

    def _draw(self):
        with self._lock:
            if self._render is None:
                return
            text = self._render()[:self._columns]    # one line: never wrap
            if text == self._text:
                return
            self._width = max(self._width, len(text))
            self._write("\r" + text.ljust(self._width))
            self._text = text

    def _tick_forever(self):
        while not self._stop.wait(REDRAW):
            self._draw()

    def _show(self, render):
        """Terminal: make ``render()`` the status line, redrawn every REDRAW seconds."""
        with self._lock:
            self._render = render
            self._draw()
            if self._ticker is None:
                self._ticker = threading.Thread(target=self._tick_forever, daemon=True,
                                                name="skdp-progress")
                self._ticker.start()

    # -- public ---------------------------------------------------------------------------

    def line(self, text=""):
        """Print a permanent line (erasing the status line first)."""
        with self._lock:
            self._render = None
            self._erase()
            self._write(f"{text}\n")

    def step(self, text):
        """Announce a step that starts now: a plain line, or the status line on a terminal
        (with its elapsed seconds)."""
        if not self.tty:
            self.line(f"  {text}")
            return
        start = time.monotonic()
        self._show(lambda: f"{text} {_seconds(time.monotonic() - start)}")

    def counter(self, total, label):
        """A :class:`Counter` of ``total`` units of work named ``label`` (started now)."""
        return Counter(self, int(total), label)

    def close(self):
        """Erase the status line and stop redrawing it."""
        with self._lock:
            self._render = None
            self._erase()
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join()
            self._ticker = None
        self._stop.clear()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Counter:
    """Counted progress: a bar on a terminal, a line per tenth of the way elsewhere."""

    def __init__(self, progress, total, label):
        self.progress, self.total, self.label = progress, max(total, 1), label
        self.done = 0
        self.start = time.monotonic()
        self._shown = -1               # the count of the last plain line
        self._drawn = 0.0              # when the bar was last drawn
        if progress.tty:
            progress._show(self._bar)
        else:
            self._plain()

    def _status(self):
        elapsed = time.monotonic() - self.start
        text = f"{self.done}/{self.total} ({100 * self.done / self.total:.0f} %), " \
               f"{_seconds(elapsed)}"
        if 0 < self.done < self.total:
            text += f", about {_seconds(elapsed * (self.total - self.done) / self.done)} left"
        return text

    def _bar(self):
        filled = BAR_WIDTH * self.done // self.total
        return f"{self.label} [{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {self._status()}"

    def _plain(self):
        self.progress.line(f"  {self.label}: {self._status()}")
        self._shown = self.done

    def tick(self, n=1):
        """``n`` more units done."""
        self.done = min(self.total, self.done + n)
        if self.progress.tty:
            now = time.monotonic()
            if now - self._drawn >= 0.1 or self.done == self.total:
                self._drawn = now
                self.progress._draw()
        elif 10 * self.done // self.total > 10 * self._shown // self.total:
            self._plain()              # a line per tenth of the way
