"""The progress of a training run: one line updated in place, or plain periodic lines.

On a terminal, a tqdm line shows the training steps done of the budget, the
percentage, the environment steps per second, the last evaluation score, the
elapsed time and the time left, and log messages print above it. Elsewhere,
such as in a log file or CI, the same shows as a plain line at most every
interval, without carriage returns.
"""

import logging
import os
import sys
import time

import tqdm


class Progress:
    """Shows how far a run is, fed with its training step and evaluation scores.

    The elapsed time counts from the creation, the start of the run. Steps per
    second and the time left count from the first update, so that neither the
    start-up nor the steps of an earlier run that this one resumes distort them.
    """

    def __init__(self, budget, step=0, stream=None, interactive=None, interval=60):
        """Start showing the progress of a run.

        Args:
          budget: Training steps the run makes in all.
          step: Training steps already made, as when resuming.
          stream: Where to write; stderr if None.
          interactive: Update one line in place; whether the stream is a
            terminal if None.
          interval: Seconds between plain lines when not interactive.
        """
        self._stream = stream or sys.stderr
        if interactive is None:
            interactive = self._stream.isatty()
        self._budget, self._step = int(budget), int(step)
        self._start_time = time.time()
        self._first_update = None  # Time and step.
        self._interval, self._printed = interval, None  # Time and step.
        self._eval = 'no eval yet'
        self._bar = self._redirect = None
        if interactive:
            # Follow the terminal's width, unless it reports none, as some do.
            width = None if _width(self._stream) else 120
            self._bar = _Line(
                total=self._budget, initial=self._step, file=self._stream,
                dynamic_ncols=width is None, ncols=width,
                bar_format='{desc} {percentage:3.0f}%|{bar:10}| {details}')
            self._show()

    def update(self, step, eval_score=None, eval_std=None):
        """Show the run at a training step, with the score of an evaluation just made.

        Args:
          step: Training steps made.
          eval_score: Mean score of the evaluation episodes; NaN if none finished;
            None if there was no evaluation since the last update.
          eval_std: Standard deviation of those scores, or None.
        """
        now = time.time()
        if self._first_update is None:
            self._first_update = now, int(step)
        if eval_score is not None:
            self._eval = _describe_eval(eval_score, eval_std)
        self._step = int(step)
        if self._bar is not None:
            self._show()
        elif self._printed is None or now - self._printed[0] >= self._interval:
            self._print_line()

    def write(self, text):
        """Print a line of text above the progress line."""
        if self._bar is not None:
            self._bar.write(text, file=self._stream)
        else:
            print(text, file=self._stream, flush=True)

    def redirect(self, handler):
        """Print the records of a logging handler above the progress line, until `close`.

        Without this, a log message printed on a terminal would end up inside
        the progress line.

        Args:
          handler: A `logging.Handler` writing to the same terminal.
        """
        if self._bar is not None:
            self._redirect = _WriteAbove(self, handler)
            handler.addFilter(self._redirect)

    def close(self):
        """Show the final state and stop updating."""
        if self._redirect is not None:
            self._redirect.handler.removeFilter(self._redirect)
        if self._bar is not None:
            self._show()
            self._bar.close()
        elif self._printed is None or self._step != self._printed[1]:
            self._print_line()

    def _show(self):
        steps, details = self._describe()
        self._bar.set_description_str(steps, refresh=False)
        self._bar.details = details
        self._bar.n = self._step
        self._bar.refresh()

    def _print_line(self):
        steps, details = self._describe()
        percent = 100 * self._step / max(self._budget, 1)
        print(f'Progress: {steps} ({percent:.1f}%), {details}', file=self._stream, flush=True)
        self._printed = time.time(), self._step

    def _describe(self):
        """The steps done of the budget, and the rate, evaluation and times."""
        now = time.time()
        rate = left = None
        if self._first_update:
            first_time, first_step = self._first_update
            if now > first_time and self._step > first_step:
                rate = (self._step - first_step) / (now - first_time)
                left = (self._budget - self._step) / rate
        rate_text = f'{rate:,.0f}' if rate is not None else '?'
        left_text = _clock(max(left, 0)) if left is not None else '?'
        return (f'{self._step:,}/{self._budget:,} steps',
                f'{rate_text} env steps/s, {self._eval}, '
                f'{_clock(now - self._start_time)} elapsed, {left_text} left')


class _Line(tqdm.tqdm):
    """A tqdm line that shows the text of its `details` after the bar."""

    details = ''

    @property
    def format_dict(self):
        return dict(super().format_dict, details=self.details)


class _WriteAbove(logging.Filter):
    """Writes a handler's records above the progress line instead of letting it print them."""

    def __init__(self, progress, handler):
        super().__init__()
        self.progress, self.handler = progress, handler

    def filter(self, record):
        if record.levelno >= self.handler.level:
            self.progress.write(self.handler.format(record))
        return False


def _width(stream):
    """Columns of the terminal of a stream; 0 if it tells none."""
    try:
        return os.get_terminal_size(stream.fileno()).columns
    except (OSError, ValueError, AttributeError):
        return 0


def _describe_eval(score, std):
    if score != score:  # NaN: no episode finished.
        return 'last eval: no episode finished'
    spread = f' ± {std:.1f}' if std is not None and std == std else ''
    return f'last eval {score:.1f}{spread}'


def _clock(seconds):
    """Seconds as H:MM:SS."""
    minutes, seconds = divmod(int(round(seconds)), 60)
    hours, minutes = divmod(minutes, 60)
    return f'{hours}:{minutes:02d}:{seconds:02d}'
