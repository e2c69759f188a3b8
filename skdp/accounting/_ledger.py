r"""A privacy ledger: the total budget spent by every DP fit made under it.

:class:`PrivacyLedger` collects the ``dp_event_`` of every fit of an estimator whose
``privacy_ledger`` parameter is the ledger -- including the fits that scikit-learn's own
``GridSearchCV``, ``cross_val_score`` and ``Pipeline`` make and throw away -- reports their
composition (``epsilon_spent``, ``remaining``, ``summary``) and refuses, with
:class:`~skdp.exceptions.BudgetExceededError`, a fit that would take the total over budget
*before* that fit reads the data.

Design
------
**Shared store, not process state.**  A search clones its estimator (``clone`` deep-copies
every parameter), and with ``n_jobs > 1`` or a Dask cluster runs the clones in other
processes, which receive a pickled copy.  A ledger that kept its entries in the Python
object (or in a thread-local or module global) would see none of those fits.  So the entries
live in a small SQLite database (``ledger.sqlite``) created by the ledger -- by default in a
fresh private temporary directory (``tempfile.mkdtemp``, mode 0700), deleted when the
ledger that created it is garbage collected or :meth:`PrivacyLedger.close` d -- and the
Python object is only a *handle* ``(path, ledger id, inode of the file, budget)``:

* ``copy.copy`` / ``copy.deepcopy`` (hence ``sklearn.base.clone``) return the ledger itself;
* pickling (joblib's loky workers, Dask workers, ``pickle.dumps``) transmits the handle
  (``__reduce__``), and the copy writes to the same file.

**Refuse rather than under-count.**  Before every operation a handle checks that the file
at its path exists, is the *same file* (inode) and carries the ledger's random id.  A worker
on another machine without the file, a copy of the store file, or a store deleted by its
owner all raise :class:`LedgerUnreachableError` -- before the fit touches the data.  (A store
on a network file system shared by all workers passes the check; SQLite's file locks are
then only as reliable as the file system's.)

**Atomic budget check: reserve, then commit.**  Every write runs in one SQLite
``BEGIN IMMEDIATE`` transaction (an exclusive write lock across processes), so "read the
entries, compose them with the new event, compare with the budget, append" is atomic:
two parallel fits cannot both pass the check and together overspend.  A fit

1. *reserves* its planned event before touching the data (the event of every skdp
   mechanism is a function of public quantities only, so it is known in
   advance); the reservation counts against the budget from then on, so a parallel fit
   sees it;
2. runs;
3. *commits* the event it actually released (normally identical to the planned one) --
   again checked atomically -- and only then sets its fitted attributes (the release).
   If the actual event would overspend (it differs from the plan), the fit raises
   :class:`~skdp.exceptions.BudgetExceededError` *without* releasing anything and the
   reservation is dropped.  A fit that fails with an exception released nothing and drops
   its reservation -- except a procedure of several releases (private pipeline, search,
   cross-validation, an estimator that releases its own bounds first) that fails, or
   whose commit is refused, after its first release: its later steps compute on what was
   already released, so the failure is charged with the planned event
   (:meth:`Reservation.charge_on_error`).  A process that dies between 1 and 3 leaves its
   reservation in the store: it keeps counting (shown as ``reserved`` in
   :meth:`PrivacyLedger.summary`) -- the safe side, since the ledger cannot know whether
   anything left that process.

For a solver whose event cannot be planned (none in skdp; a planner per solver lives in
:mod:`skdp.linear_model._base`), step 1 is skipped and the check happens at step 3:
still atomic and still before the release, but after the rows were read.  That is sound
only for an event that is a function of public quantities alone: an event that moves with
anything computed from the rows -- even in its last bits, as a model's event at a bound
released inside the fit does -- makes a refusal at step 3, which leaves the ledger
unchanged, depend on the data.  skdp's fits that release their own bounds therefore
reserve a public upper bound of their event and commit exactly that
(:meth:`skdp.linear_model._base.BaseDPLinear._run_solver_released_bounds`); whether a check
fails then depends only on public quantities, and refusing reveals nothing about the data.

**Composition.**  The total is the sequential composition (:func:`skdp.accounting.compose`)
of every reserved and committed event, read under replace-one neighbours by
:func:`skdp.accounting.get_epsilon` (exact closed forms, else the PLD accountant).
Treating each fit as touching every row is conservative for cross-validation folds (a row
is in only some training folds).  Events are composed in a canonical order (sorted by their
serialisation), so serial, joblib and Dask runs of the same search report bit-identical
totals.  Events are stored as JSON (type name and fields of dp-accounting's event classes,
reconstructed from that package only -- no pickle is ever loaded from the store).

**What a ledger cannot see.**  It counts the *fits* of estimators that carry it.  It cannot
see computations made by other code on the private data: a plain ``StandardScaler`` before
the DP estimator, or the validation scores that ``GridSearchCV`` computes on held-out
private rows to choose ``best_params_`` (``cv_results_`` is not DP).  :meth:`attach` puts the
ledger on every DP estimator inside a meta-estimator and detects these paths: it refuses
(``TypeError``) non-DP steps that learn from the data and warns
(:class:`~skdp.exceptions.PrivacyLeakWarning`) for meta-estimators, like scikit-learn's
searches, that compute on the private data themselves.  skdp's private procedures --
:class:`~skdp.PrivatePipeline`, the private searches and
:func:`~skdp.model_selection.dp_cross_validate` -- take the ledger as their own
``privacy_ledger`` and are charged their whole planned event before they read a row
(a short budget refuses them there), then the event released.  A fit whose bounds are
read from the data (``privacy_guaranteed_ = False``) is recorded as a
``NonPrivateDpEvent`` (infinite epsilon): with a finite budget it is refused before it
runs.
"""

import contextlib
import json
import math
import numbers
import os
import shutil
import socket
import sqlite3
import tempfile
import time
import urllib.parse
import uuid
import warnings
import weakref
from dataclasses import dataclass
from typing import Any

import attr

from ..exceptions import BudgetExceededError, PrivacyLeakWarning
from . import _lazy_dp_accounting as dp_accounting  # events only; see that module
from ._accountant import get_delta, get_epsilon
from ._events import compose
from .._stacklevel import user_stacklevel

__all__ = ["PrivacyLedger", "LedgerEntry", "LedgerError", "LedgerUnreachableError",
           "LedgerCorruptError", "LedgerPermissionError"]

STORE_NAME = "ledger.sqlite"
#: Seconds a process waits for the store's write lock before giving up (a budget check of
#: PLD-accounted events can hold it for a few seconds).
LOCK_TIMEOUT = 600.0
SCHEMA_VERSION = "1"
#: Schema of a store whose budget is a Rényi filter (``adaptive=True``): the meta table
#: also holds the filter's order and delta reserve.  A version of skdp that knows only
#: schema 1 refuses such a store instead of composing it exactly (which admits more).
FILTER_SCHEMA_VERSION = "2"

_ACTIVE = ("reserved", "committed")


class LedgerError(RuntimeError):
    """A problem with a :class:`PrivacyLedger`'s store; the release is refused.

    The message names the store's path and the cause.  Subclasses tell which:
    :class:`LedgerUnreachableError`, :class:`LedgerCorruptError`,
    :class:`LedgerPermissionError`.

    Examples
    --------
    >>> from skdp.accounting import LedgerCorruptError, LedgerError, LedgerUnreachableError
    >>> issubclass(LedgerUnreachableError, LedgerError), issubclass(LedgerCorruptError,
    ...                                                             LedgerError)
    (True, True)
    """


class LedgerUnreachableError(LedgerError):
    """The ledger's store cannot be reached from this process: the fit is refused.

    Raised before the data is touched when the store file is missing (a worker on another
    machine, or a store already closed by its owner), is a different file than the one the
    ledger created (a copy), or belongs to another ledger.

    Examples
    --------
    >>> import pickle
    >>> from skdp.accounting import LedgerUnreachableError, PrivacyLedger
    >>> ledger = PrivacyLedger(epsilon=1.0)
    >>> copy = pickle.loads(pickle.dumps(ledger))   # e.g. sent to a worker
    >>> ledger.close()                                # the store is gone
    >>> try:
    ...     copy.epsilon_spent()
    ... except LedgerUnreachableError:
    ...     print("refused")
    refused
    """


class LedgerCorruptError(LedgerError, ValueError):
    """The file is not a ledger store, or its header or an entry cannot be read back.

    A corrupt store never reads as "nothing spent": every operation that needs the total
    (a fit, :meth:`PrivacyLedger.epsilon_spent`, :meth:`PrivacyLedger.summary`) raises.

    Examples
    --------
    >>> import os, tempfile
    >>> from skdp.accounting import LedgerCorruptError, PrivacyLedger
    >>> path = os.path.join(tempfile.mkdtemp(), "notes.sqlite")
    >>> _ = open(path, "w").write("not a database")
    >>> try:
    ...     PrivacyLedger.open(path)
    ... except LedgerCorruptError as exc:
    ...     print("refused")
    refused
    """


class LedgerPermissionError(LedgerError, PermissionError):
    """This process may not write the store (or create it): the release is refused.

    A ledger that cannot record a release cannot account it.  SQLite also writes a
    journal file next to the store, so its *directory* must be writable too.  It is a
    ``PermissionError`` too, so ``except PermissionError`` catches it.

    Examples
    --------
    >>> from skdp.accounting import LedgerError, LedgerPermissionError
    >>> issubclass(LedgerPermissionError, LedgerError), issubclass(LedgerPermissionError,
    ...                                                            PermissionError)
    (True, True)
    """


def _sqlite_error(path, exc, action):
    """The skdp error for a ``sqlite3.Error`` raised while ``action`` on the store ``path``."""
    msg = str(exc)
    directory = os.path.dirname(path) or "."
    where = f"the privacy ledger's store {path}"
    if "readonly" in msg or "read-only" in msg or "attempt to write" in msg or (
            "unable to open" in msg and not os.access(directory, os.W_OK)):
        state = ("does not exist yet" if not os.path.exists(path)
                 else "is writable" if os.access(path, os.W_OK) else "is not writable")
        writable = (f"the file {state}, its directory {directory} is "
                    f"{'' if os.access(directory, os.W_OK) else 'not '}writable")
        return LedgerPermissionError(
            f"cannot {action} {where}: this process may not write it ({writable}; sqlite: "
            f"{msg}). Nothing was released. Make the file and its directory writable (SQLite "
            "writes a journal next to the store), or use a ledger elsewhere.")
    if isinstance(exc, sqlite3.DatabaseError) and not isinstance(exc, sqlite3.OperationalError) \
            or "not a database" in msg or "malformed" in msg:
        return LedgerCorruptError(
            f"cannot {action} {where}: the file is corrupt (sqlite: {msg}). Nothing was "
            "released, and the spent budget is unknown, so every release under this "
            "ledger is refused. Restore the store from a backup.")
    return LedgerUnreachableError(
        f"cannot {action} {where} (sqlite: {msg}). Nothing was released.")


# --------------------------------------------------------------------------------------
# Event (de)serialisation: JSON of dp-accounting's attrs classes, no pickle.
# --------------------------------------------------------------------------------------


def _event_class(name):
    """The event class recorded under ``name``: dp-accounting's, or skdp's DeltaDpEvent."""
    from ._events import DeltaDpEvent

    return DeltaDpEvent if name == "DeltaDpEvent" else getattr(dp_accounting, name, None)


def _to_jsonable(obj):
    if isinstance(obj, dp_accounting.DpEvent):
        cls = type(obj)
        if not attr.has(cls) or _event_class(cls.__name__) is not cls:
            raise TypeError(f"cannot record {obj!r}: not a dp_accounting event class")
        return {
            "__event__": type(obj).__name__,
            **{f.name: _to_jsonable(getattr(obj, f.name)) for f in attr.fields(type(obj))},
        }
    if isinstance(obj, (list, tuple)):
        return [_to_jsonable(v) for v in obj]
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    if hasattr(obj, "item") and callable(obj.item):  # numpy scalar
        return _to_jsonable(obj.item())
    raise TypeError(f"cannot record an event field of type {type(obj).__name__}: {obj!r}")


def _from_jsonable(obj):
    if isinstance(obj, dict):
        name = obj["__event__"]
        cls = _event_class(name)
        if not (isinstance(cls, type) and issubclass(cls, dp_accounting.DpEvent)):
            raise ValueError(f"unknown event type in the ledger store: {name!r}")
        return cls(**{k: _from_jsonable(v) for k, v in obj.items() if k != "__event__"})
    if isinstance(obj, list):
        return [_from_jsonable(v) for v in obj]
    return obj


def event_to_json(event):
    """Serialise a dp-accounting event to a canonical JSON string."""
    return json.dumps(_to_jsonable(event), sort_keys=True, allow_nan=True)


def event_from_json(text):
    """Inverse of :func:`event_to_json`."""
    return _from_jsonable(json.loads(text))


# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LedgerEntry:
    """One release recorded in a :class:`PrivacyLedger`.

    Attributes
    ----------
    index : int
        Position in the store (increasing with the time of the reservation).
    status : {"reserved", "committed"}
        ``"reserved"``: planned and counted, not (yet) committed -- a fit in flight, or one
        whose process died.  ``"committed"``: released.
    source : str
        What made the release (e.g. the estimator's class name).
    event : dp_accounting.DpEvent
        The event (planned, for a reservation).
    time : float
        Unix time of the last write.
    host : str
        Host name of the process that wrote it.
    pid : int
        Process id of the process that wrote it.

    Examples
    --------
    >>> from skdp.accounting import PrivacyLedger, gaussian_event
    >>> with PrivacyLedger() as ledger:
    ...     ledger.record(gaussian_event(1.0, 0.5), source="demo")
    ...     entry = ledger.entries()[0]
    >>> entry.status, entry.source, entry.event.noise_multiplier
    ('committed', 'demo', 4.0)
    """

    index: int
    status: str
    source: str
    event: Any
    time: float
    host: str
    pid: int


class Reservation:
    """Budget reserved for one release; see :meth:`PrivacyLedger.reserve`.

    Parameters
    ----------
    ledger : PrivacyLedger
        The ledger that made the reservation.
    entry_id : int or None
        Row of the reservation in the store (None when nothing was planned).
    source : str
        What makes the release.

    Examples
    --------
    >>> from skdp.accounting import PrivacyLedger, gaussian_event
    >>> with PrivacyLedger(epsilon=5.0, delta=1e-5) as ledger:
    ...     with ledger.reserve(gaussian_event(1.0, 1.0), source="demo") as ticket:
    ...         released = 42.0          # ... the DP computation runs here ...
    ...         ticket.commit(gaussian_event(1.0, 1.0))
    ...     print(len(ledger), round(ledger.epsilon_spent(), 2))
    1 4.38
    """

    def __init__(self, ledger, entry_id, source):
        self.ledger = ledger
        self.entry_id = entry_id
        self.source = source
        self.state = "reserved"
        self._charge_on_error = False

    def commit(self, event):
        """Record ``event`` as released (atomically re-checking the budget).

        Parameters
        ----------
        event : dp_accounting.DpEvent
            What was actually released.

        Raises
        ------
        BudgetExceededError
            If ``event`` would take the total over budget (only possible when it differs
            from the planned one); the reservation is then dropped -- or, after
            :meth:`charge_on_error`, kept committed as the planned event -- and the caller
            must not release anything.
        """
        if self.state != "reserved":
            raise RuntimeError(f"reservation already {self.state}")
        try:
            self.ledger._commit(self, event)
        except BudgetExceededError:
            # after charge_on_error the planned event stays committed (_commit)
            self.state = "committed" if self._charge_on_error else "refused"
            raise
        self.state = "committed"

    def cancel(self):
        """Drop the reservation: nothing was released."""
        if self.state == "reserved":
            self.ledger._cancel(self)
            self.state = "cancelled"

    def charge_on_error(self):
        """From now on an exception *commits* the planned event instead of cancelling it.

        A composite procedure (a private pipeline, search or cross-validation) calls this
        just before its first release.  Its later steps compute on what the earlier ones
        released -- the model on the transformers' basis, the next fold on the data -- so
        an exception they raise (a refusal that reads a released width, a check on a
        row, ``BudgetExceededError`` from a step that spent off plan) is itself a function
        of the data and of releases already made: the attempt has spent budget even though
        it returns nothing.  The planned event was reserved from public quantities before
        any row was read and dominates everything the procedure releases, so committing
        it charges the failed attempt with a public upper bound (no new budget check: it
        was admitted at :meth:`PrivacyLedger.reserve`; the entry's source says it
        failed).  The same holds when :meth:`commit` is refused (the actual event differs
        from the plan): the planned event stays committed and the refusal is raised.
        Without a planned event (``reserve(None)``) there is nothing public to
        charge and this raises ``RuntimeError``.
        """
        if self.entry_id is None:
            raise RuntimeError("charge_on_error needs a reservation of a planned event")
        self._charge_on_error = True

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None:
            if self._charge_on_error and self.state == "reserved":
                self.ledger._commit_reserved(self, f"{self.source} (failed)")
                self.state = "committed"
            else:
                self.cancel()
            return False
        if self.state == "reserved":
            # Leave the reservation counted (safe side) and flag the programming error.
            raise RuntimeError(
                "a ledger reservation was left without commit(event) or cancel(); it stays "
                "counted against the budget"
            )
        return False


class _NullReservation:
    """Stand-in when no ledger is set."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def commit(self, event):
        pass

    def cancel(self):
        pass

    def charge_on_error(self):
        pass


def ledger_reservation(ledger, planned_event, source):
    """``ledger.reserve(planned_event, source)``, or a no-op when ``ledger`` is None."""
    if ledger is None:
        return _NullReservation()
    if not isinstance(ledger, PrivacyLedger):
        raise TypeError(f"privacy_ledger must be a PrivacyLedger or None, got {ledger!r}")
    return ledger.reserve(planned_event, source=source)


def _rebuild(path, ledger_id, inode, epsilon, delta, renyi_filter=None):
    obj = PrivacyLedger.__new__(PrivacyLedger)
    obj._init_handle(path, ledger_id, inode, epsilon, delta, owner_dir=None,
                     renyi_filter=renyi_filter)
    return obj


def _check_budget(epsilon, delta):
    from sklearn.utils._param_validation import Interval, validate_parameter_constraints

    # the estimators' own constraints: "1" or True is refused, not coerced
    validate_parameter_constraints(
        {"epsilon": [Interval(numbers.Real, 0, None, closed="neither"), None],
         "delta": [Interval(numbers.Real, 0, 1, closed="left")]},
        {"epsilon": epsilon, "delta": delta}, caller_name="PrivacyLedger")
    if epsilon is not None:
        epsilon = float(epsilon)
        if not (epsilon > 0.0 and math.isfinite(epsilon)):
            raise ValueError(f"epsilon budget must be finite and > 0 (or None), got {epsilon!r}")
    delta = float(delta)
    if not 0.0 <= delta < 1.0:
        raise ValueError(f"delta must be in [0, 1), got {delta!r}")
    return epsilon, delta


def _filter_for(epsilon, delta, adaptive):
    """The Rényi filter of a new ledger, or None (``adaptive=False``)."""
    import numpy as np

    if not isinstance(adaptive, (bool, np.bool_)):
        raise TypeError(f"adaptive must be True or False, got {adaptive!r}")
    if not adaptive:
        return None
    if epsilon is None:
        raise ValueError("an adaptive ledger needs an epsilon budget: its filter's Rényi "
                         "order and budget are fixed from (epsilon, delta) at creation")
    if not delta > 0.0:
        raise ValueError("an adaptive ledger needs delta > 0: its Rényi filter converts to "
                         "(epsilon, delta) with delta > 0")
    from ._filter import RenyiFilter

    return RenyiFilter.for_budget(epsilon, delta)


def _stored_filter(meta, epsilon, delta):
    """The filter a store's header records (None for an exact store); ValueError if the
    header is inconsistent."""
    from ._filter import MIN_ORDER, RenyiFilter

    if meta["schema"] == SCHEMA_VERSION:
        if "composition" in meta:
            raise ValueError("a schema-1 store with a composition mode")
        return None
    if meta.get("composition") != "renyi_filter" or epsilon is None:
        raise ValueError(f"unknown composition {meta.get('composition')!r}")
    order = float(json.loads(meta["filter_order"]))
    reserve = float(json.loads(meta["filter_delta_reserve"]))
    if not (MIN_ORDER <= order < math.inf and 0.0 <= reserve < delta):
        raise ValueError(f"filter order {order!r} or delta reserve {reserve!r} out of range")
    return RenyiFilter(epsilon, delta, order, reserve)


class PrivacyLedger:
    """Total privacy budget spent by every DP fit made under it, across processes.

    Pass the ledger as the ``privacy_ledger`` parameter of skdp estimators (or call
    :meth:`attach` on a pipeline or search): every fit reserves its event before touching
    the data, raises :class:`~skdp.exceptions.BudgetExceededError` if the composition of
    all events so far with its own would exceed ``(epsilon, delta)``, and commits the event
    it released.  Fits inside ``clone``, ``GridSearchCV``, ``cross_val_score``,
    ``Pipeline``, joblib worker processes and Dask workers all write to the same store
    (design: :mod:`skdp.accounting._ledger`).

    The total is the sequential composition of the events,

    .. math:: \\varepsilon_{\\rm spent}(\\delta) = \\min\\{\\varepsilon :
       \\mathcal{M}_1 \\circ \\dots \\circ \\mathcal{M}_k \\text{ is }
       (\\varepsilon, \\delta)\\text{-DP}\\},

    computed by :func:`skdp.accounting.get_epsilon` under replace-one neighbours (exact
    Gaussian-DP composition for Gaussian releases, the PLD accountant otherwise).

    Parameters
    ----------
    epsilon : float or None, default=None
        Budget: the total must stay ``(epsilon, delta)``-DP.  ``None``: no limit, the ledger
        only records.
    delta : float, default=1e-6
        Delta of the budget, and the delta at which :meth:`epsilon_spent` reports.
    path : str or path-like or None, default=None
        Where to create the store (a new SQLite file).  ``None``: a fresh private
        temporary directory, deleted with the ledger.  A given path is kept (reopen it
        with :meth:`open`) and must not exist yet.
    adaptive : bool, default=False
        ``False``: the budget check composes the events exactly -- a proof for fits whose
        events are fixed in advance (a grid, its folds, a loop over seeds).  ``True``: the
        budget is a Rényi-DP *filter* (:mod:`skdp.accounting._filter`), valid when each
        fit's ``epsilon``, solver or estimator is chosen after looking at earlier models,
        as in an interactive session; it needs an ``epsilon`` budget and admits less
        (for Gaussian fits at ``(1, 1e-6)``, 0.82 of the exact composition's ``mu^2``).

    Attributes
    ----------
    epsilon : float or None
        The epsilon budget.
    delta : float
        The delta of the budget.
    path : str
        Absolute path of the store.
    ledger_id : str
        Random identifier written in the store and checked by every copy.
    adaptive : bool
        Whether the budget is a Rényi filter.
    renyi_filter : RenyiFilter or None
        The filter's order, Rényi budget and ``delta`` reserve (``adaptive=True``).

    See Also
    --------
    skdp.accounting.fitted_dp_event : the event of one fitted estimator or pipeline.

    Notes
    -----
    A fit with ``privacy_guaranteed_ = False`` (bounds read from the data) is recorded as
    ``NonPrivateDpEvent``: infinite epsilon.  Validation scores computed by a plain
    ``GridSearchCV`` or ``cross_val_score`` on held-out private rows are *not* fits and are
    not counted (:meth:`attach` warns about them).

    **Private procedures: one charge, before any row.**  skdp's private selection and
    pipelines -- :class:`~skdp.model_selection.DPGridSearchCV`,
    :class:`~skdp.model_selection.DPRandomizedSearchCV`,
    :func:`~skdp.model_selection.dp_cross_validate` and :class:`~skdp.PrivatePipeline` --
    take the ledger as their own ``privacy_ledger``.  Each fixes its whole event from
    public quantities before reading a row (the candidates' placeholder events, the
    folds, the number of runs; a pipeline's plan), so it reserves that event first -- a
    budget too short for it raises :class:`~skdp.exceptions.BudgetExceededError` having
    read and published nothing -- and commits the event it released before it sets a
    fitted attribute or returns a result: one entry, equal to its ``dp_event_``.  Their
    candidates and steps carry no ledger (refused, or taken off by the plan): that would
    charge the procedure twice, and the per-fit events are not the selection's.

    **Events fixed in advance, or a filter.**  The exact composition (``adaptive=False``)
    bounds a sequence of fits whose events (privacy profiles) do not depend on what
    earlier fits released: a grid and its folds, a loop over seeds, a pipeline of steps
    whose parameters are set.  When a fit's event is chosen *after* seeing earlier
    releases -- its ``epsilon`` or solver picked from a released model, or an estimator
    whose ``auto`` rules read the width a :class:`~skdp.preprocessing.DPSplineTransformer`
    or discovering :class:`~skdp.preprocessing.DPOneHotEncoder` before it released -- the
    budget check is a privacy *filter*, and composing the events that happened is not a
    proven bound for it (Rogers, Roth, Ullman & Vadhan 2016;
    :mod:`skdp.accounting._released_width` shows the gap for released widths).  Use
    ``adaptive=True`` then: a Rényi filter of one order fixed at creation (Feldman &
    Zrnic 2021), proven for any such choice (:mod:`skdp.accounting._filter`).  Its total
    has no running epsilon: the guarantee of the interaction is the budget itself, so
    :meth:`epsilon_spent` reports the budget's epsilon once anything is recorded, and
    :attr:`remaining` the epsilon of the largest Gaussian fit still admitted.  (For
    released widths in particular, a public ``auto_n_features`` or a
    :class:`~skdp.PrivatePipeline` also restores the exact event.)

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.model_selection import GridSearchCV
    >>> from skdp import DPLogisticRegression
    >>> from skdp.accounting import PrivacyLedger
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-1, 1, (300, 2)); y = (X[:, 0] > 0).astype(int)
    >>> ledger = PrivacyLedger(epsilon=3.0, delta=1e-6)
    >>> search = GridSearchCV(DPLogisticRegression(epsilon=0.5, data_norm=2.0, classes=[0, 1],
    ...     random_state=0, privacy_ledger=ledger), {"alpha": [0.05, 0.1]}, cv=2,
    ...     error_score="raise")
    >>> search = search.fit(X, y)       # 2 x 2 fold fits + 1 refit, all recorded
    >>> len(ledger), round(ledger.epsilon_spent(), 2), round(ledger.remaining, 2)
    (5, 1.62, 1.38)

    (The default solver, objective perturbation, records a zCDP curve: five fits at 0.5
    compose to 1.62 in Rényi DP, where five Gaussian releases would compose to 1.19.)
    >>> ledger.close()
    """

    def __init__(self, *, epsilon=None, delta=1e-6, path=None, adaptive=False):
        epsilon, delta = _check_budget(epsilon, delta)
        renyi_filter = _filter_for(epsilon, delta, adaptive)
        owner_dir = None
        if path is None:
            owner_dir = tempfile.mkdtemp(prefix="skdp-ledger-")
            path = os.path.join(owner_dir, STORE_NAME)
        else:
            path = os.path.abspath(os.fspath(path))
            if os.path.exists(path):
                raise FileExistsError(
                    f"{path} exists; reopen an existing ledger with PrivacyLedger.open(path)"
                )
        ledger_id = uuid.uuid4().hex
        try:
            self._create_store(path, ledger_id, epsilon, delta, renyi_filter)
        except sqlite3.Error as exc:
            if owner_dir is not None:
                shutil.rmtree(owner_dir, True)
            raise _sqlite_error(path, exc, "create") from exc
        inode = os.stat(path).st_ino
        self._init_handle(path, ledger_id, inode, epsilon, delta, owner_dir=owner_dir,
                          renyi_filter=renyi_filter)

    @staticmethod
    def _create_store(path, ledger_id, epsilon, delta, renyi_filter=None):
        con = sqlite3.connect(path, timeout=LOCK_TIMEOUT, isolation_level=None)
        try:
            con.execute("PRAGMA journal_mode=DELETE")
            con.execute("BEGIN IMMEDIATE")
            con.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            con.execute(
                "CREATE TABLE entries (id INTEGER PRIMARY KEY AUTOINCREMENT, status TEXT NOT "
                "NULL, source TEXT NOT NULL, event TEXT NOT NULL, time REAL NOT NULL, host "
                "TEXT NOT NULL, pid INTEGER NOT NULL)"
            )
            meta = {
                "ledger_id": ledger_id,
                "epsilon": json.dumps(epsilon),
                "delta": json.dumps(delta),
                "schema": SCHEMA_VERSION,
                "created_host": socket.gethostname(),
                "created_time": repr(time.time()),
            }
            if renyi_filter is not None:
                meta.update(schema=FILTER_SCHEMA_VERSION, composition="renyi_filter",
                            filter_order=json.dumps(renyi_filter.order),
                            filter_delta_reserve=json.dumps(renyi_filter.delta_reserve))
            con.executemany("INSERT INTO meta VALUES (?, ?)", list(meta.items()))
            con.execute("COMMIT")
        finally:
            con.close()

    def _init_handle(self, path, ledger_id, inode, epsilon, delta, owner_dir,
                     renyi_filter=None):
        self._path = path
        self._id = ledger_id
        self._inode = inode
        self._epsilon = epsilon
        self._delta = delta
        self._filter = renyi_filter
        self._finalizer = (
            weakref.finalize(self, shutil.rmtree, owner_dir, True) if owner_dir else None
        )

    @classmethod
    def open(cls, path):
        """Reopen the ledger stored at ``path`` (budget and entries are read from it).

        Parameters
        ----------
        path : str or path-like
            A store created by ``PrivacyLedger(..., path=path)``.

        Returns
        -------
        ledger : PrivacyLedger
            A handle on the same store (it never deletes the file).

        Examples
        --------
        >>> import os, tempfile
        >>> from skdp.accounting import PrivacyLedger, gaussian_event
        >>> path = os.path.join(tempfile.mkdtemp(), "study.sqlite")
        >>> PrivacyLedger(epsilon=2.0, path=path).record(gaussian_event(4.0, 1.0))
        >>> again = PrivacyLedger.open(path)
        >>> again.epsilon, len(again)
        (2.0, 1)
        """
        path = os.path.abspath(os.fspath(path))
        if not os.path.isfile(path):
            raise FileNotFoundError(path)
        try:
            con = sqlite3.connect(
                f"file:{urllib.parse.quote(path)}?mode=rw", uri=True, timeout=LOCK_TIMEOUT
            )
            try:
                meta = dict(con.execute("SELECT key, value FROM meta").fetchall())
            finally:
                con.close()
        except sqlite3.Error as exc:
            if "no such table" in str(exc):
                raise LedgerCorruptError(
                    f"{path} is not a PrivacyLedger store (an SQLite file without its "
                    f"tables: {exc})") from exc
            raise _sqlite_error(path, exc, "open") from exc
        schemas = (SCHEMA_VERSION, FILTER_SCHEMA_VERSION)
        if meta.get("schema") not in schemas or "ledger_id" not in meta:
            raise LedgerCorruptError(
                f"{path} is not a PrivacyLedger store (schema {' or '.join(schemas)}): its "
                "header has no ledger id or another schema")
        try:
            epsilon, delta = _check_budget(json.loads(meta["epsilon"]),
                                           json.loads(meta["delta"]))
            renyi_filter = _stored_filter(meta, epsilon, delta)
        except (KeyError, ValueError, TypeError) as exc:
            raise LedgerCorruptError(
                f"the header of the privacy ledger's store {path} is corrupt (budget "
                f"{meta.get('epsilon')!r}, {meta.get('delta')!r}: {exc}); restore the store "
                "from a backup") from exc
        return _rebuild(path, meta["ledger_id"], os.stat(path).st_ino, epsilon, delta,
                        renyi_filter)

    # -- identity: copies are handles on the same store ---------------------------------

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def __reduce__(self):
        return (_rebuild, (self._path, self._id, self._inode, self._epsilon, self._delta,
                           self._filter))

    def __eq__(self, other):
        return isinstance(other, PrivacyLedger) and other._id == self._id

    def __hash__(self):
        return hash(self._id)

    def __repr__(self):
        adaptive = ", adaptive=True" if self._filter is not None else ""
        return (
            f"PrivacyLedger(epsilon={self._epsilon!r}, delta={self._delta!r}, "
            f"path={self._path!r}{adaptive})"
        )

    @property
    def epsilon(self):
        """The epsilon budget (None: unlimited)."""
        return self._epsilon

    @property
    def delta(self):
        """The delta of the budget."""
        return self._delta

    @property
    def path(self):
        """Absolute path of the SQLite store."""
        return self._path

    @property
    def ledger_id(self):
        """Random identifier of the ledger, checked by every copy."""
        return self._id

    @property
    def adaptive(self):
        """Whether the budget is a Rényi filter (valid for adaptively chosen fits)."""
        return self._filter is not None

    @property
    def renyi_filter(self):
        """The :class:`~skdp.accounting.RenyiFilter` of an adaptive ledger, else
        None."""
        return self._filter

    def close(self):
        """Delete the temporary store if this handle created it (else do nothing).

        Copies of the ledger (in workers, or pickled) then refuse to record
        (:class:`LedgerUnreachableError`).
        """
        if self._finalizer is not None:
            self._finalizer()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    # -- store access --------------------------------------------------------------------

    def _unreachable(self, why):
        return LedgerUnreachableError(
            f"the privacy ledger's store {self._path} is not reachable from this process "
            f"(host {socket.gethostname()}, pid {os.getpid()}): {why}. The fit is refused "
            "rather than left unaccounted; run the workers where the store's file system is "
            "mounted (same machine or a shared file system), or without the ledger."
        )

    def _connect(self):
        try:
            st = os.stat(self._path)
        except OSError as exc:
            raise self._unreachable(f"{type(exc).__name__}: {exc}") from None
        if st.st_ino != self._inode:
            raise self._unreachable("the file there is not the ledger's store (a copy?)")
        try:
            con = sqlite3.connect(
                f"file:{urllib.parse.quote(self._path)}?mode=rw",
                uri=True,
                timeout=LOCK_TIMEOUT,
                isolation_level=None,
            )
            row = con.execute("SELECT value FROM meta WHERE key = 'ledger_id'").fetchone()
        except sqlite3.Error as exc:
            error = _sqlite_error(self._path, exc, "read")
            if isinstance(error, LedgerUnreachableError):
                raise self._unreachable(f"cannot read it ({exc})") from None
            raise error from None
        if row is None or row[0] != self._id:
            con.close()
            raise self._unreachable("it belongs to another ledger")
        return con

    @contextlib.contextmanager
    def _write(self):
        con = self._connect()
        try:
            try:
                con.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise _sqlite_error(self._path, exc, "write to") from None
            try:
                yield con
            except BaseException as exc:
                with contextlib.suppress(sqlite3.Error):
                    con.execute("ROLLBACK")
                if isinstance(exc, sqlite3.Error):
                    raise _sqlite_error(self._path, exc, "write to") from None
                raise
            try:
                con.execute("COMMIT")
            except sqlite3.Error as exc:
                with contextlib.suppress(sqlite3.Error):
                    con.execute("ROLLBACK")
                raise _sqlite_error(self._path, exc, "write to") from None
        finally:
            con.close()

    def _read(self, status=_ACTIVE):
        con = self._connect()
        try:
            marks = ",".join("?" * len(status))
            return con.execute(
                f"SELECT id, status, source, event, time, host, pid FROM entries "
                f"WHERE status IN ({marks}) ORDER BY id",
                status,
            ).fetchall()
        except sqlite3.Error as exc:
            raise _sqlite_error(self._path, exc, "read") from None
        finally:
            con.close()

    def _decode(self, text, entry_id=None):
        """The event of one stored entry; a corrupt entry raises (never reads as 0 spent)."""
        try:
            return event_from_json(text)
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            which = "an entry" if entry_id is None else f"entry {entry_id}"
            raise LedgerCorruptError(
                f"{which} of the privacy ledger's store {self._path} is corrupt ({exc}). The "
                "spent budget is unknown, so every release under this ledger is refused; "
                "restore the store from a backup.") from None

    def _total(self, event_texts):
        """Composition (canonical order) of stored events, decoded with :meth:`_decode`."""
        texts = sorted(event_texts)
        if not texts:
            return dp_accounting.NoOpDpEvent()
        return compose(*[self._decode(t) for t in texts])

    @staticmethod
    def _active_texts(con, exclude=None):
        rows = con.execute(
            "SELECT id, event FROM entries WHERE status IN ('reserved', 'committed')"
        ).fetchall()
        return [text for i, text in rows if i != exclude]

    def _exceeds(self, event_texts):
        """(over budget?, epsilon of the composition at the budget delta).

        An adaptive ledger asks its Rényi filter instead (its epsilon is then NaN: a
        filter has no running epsilon)."""
        if self._epsilon is None:  # recording only: no need to account now
            return False, math.nan
        if self._filter is not None:
            self._check_decodable(event_texts)
            return not self._filter.admits(event_texts), math.nan
        total = self._total(event_texts)
        eps = get_epsilon(total, self._delta)
        if eps <= self._epsilon:
            return False, eps
        # Both are valid guarantees; get_epsilon's bisection may land a hair above.
        return get_delta(total, self._epsilon) > self._delta, eps

    def _refusal(self, source, eps, event):
        own = get_epsilon(event, self._delta)
        what = (
            "a fit whose bounds are read from the data is not differentially private"
            if math.isinf(own)
            else f"this release alone costs epsilon = {own:.4g}"
        )
        if self._filter is not None:
            return BudgetExceededError(
                f"{source}: the privacy budget (epsilon={self._epsilon:g}, "
                f"delta={self._delta:g}, adaptive) would be exceeded: "
                f"{self._filter_state([event_to_json(event)])} ({what}; a Gaussian release "
                f"up to epsilon = {self.remaining:.4g} still fits). Nothing was released.")
        return BudgetExceededError(
            f"{source}: the privacy budget (epsilon={self._epsilon:g}, delta={self._delta:g}) "
            f"would be exceeded: with this release the total is epsilon = {eps:.4g} at "
            f"delta = {self._delta:g} ({what}; spent so far: "
            f"{self.epsilon_spent():.4g}). Nothing was released."
        )

    def _insert(self, con, status, source, text):
        cur = con.execute(
            "INSERT INTO entries (status, source, event, time, host, pid) VALUES "
            "(?, ?, ?, ?, ?, ?)",
            (status, source, text, time.time(), socket.gethostname(), os.getpid()),
        )
        return cur.lastrowid

    # -- spending ------------------------------------------------------------------------

    def reserve(self, planned_event=None, *, source="release"):
        """Reserve budget for a release before it runs (atomic check-and-append).

        Parameters
        ----------
        planned_event : dp_accounting.DpEvent or None, default=None
            The event the release will have, computed from public quantities.  ``None``:
            unknown in advance; the budget is then checked only at
            :meth:`Reservation.commit`, still before anything is released.
        source : str, default="release"
            Label shown in :meth:`summary`.

        Returns
        -------
        reservation : Reservation
            Use it as a context manager and call ``commit(actual_event)`` after the
            computation and before releasing its output; an exception cancels it (or,
            after :meth:`Reservation.charge_on_error`, commits the planned event).

        Raises
        ------
        BudgetExceededError
            If the planned event would take the total over budget.
        LedgerUnreachableError
            If the store cannot be reached from this process.
        """
        source = str(source)
        if planned_event is None:
            self._connect().close()  # refuse now if the store is unreachable
            return Reservation(self, None, source)
        text = event_to_json(planned_event)
        with self._write() as con:
            over, eps = self._exceeds(self._active_texts(con) + [text])
            if not over:
                entry_id = self._insert(con, "reserved", source, text)
        if over:  # nothing was written
            raise self._refusal(source, eps, planned_event)
        return Reservation(self, entry_id, source)

    def _commit(self, reservation, event):
        text = event_to_json(event)
        with self._write() as con:
            if reservation.entry_id is not None:
                row = con.execute(
                    "SELECT status FROM entries WHERE id = ?", (reservation.entry_id,)
                ).fetchone()
                if row is None or row[0] != "reserved":
                    raise RuntimeError("the reservation is no longer in the ledger's store")
            over, eps = self._exceeds(
                self._active_texts(con, exclude=reservation.entry_id) + [text]
            )
            if over and reservation._charge_on_error:
                # released before this check: the planned event (admitted) is charged
                self._mark_committed(con, reservation.entry_id,
                                     f"{reservation.source} (failed)")
            elif over:  # drop the reservation (committed below), then refuse
                if reservation.entry_id is not None:
                    con.execute("DELETE FROM entries WHERE id = ?", (reservation.entry_id,))
            elif reservation.entry_id is None:
                reservation.entry_id = self._insert(con, "committed", reservation.source, text)
            else:
                con.execute(
                    "UPDATE entries SET status = 'committed', event = ?, time = ?, host = ?, "
                    "pid = ? WHERE id = ?",
                    (text, time.time(), socket.gethostname(), os.getpid(), reservation.entry_id),
                )
        if over:
            raise self._refusal(reservation.source, eps, event)

    def _commit_reserved(self, reservation, source):
        """Turn the reserved row into a committed one, its planned event and all, labelled
        ``source`` (:meth:`Reservation.charge_on_error`; admitted when reserved)."""
        with self._write() as con:
            self._mark_committed(con, reservation.entry_id, source)

    @staticmethod
    def _mark_committed(con, entry_id, source):
        con.execute(
            "UPDATE entries SET status = 'committed', source = ?, time = ?, host = ?, "
            "pid = ? WHERE id = ? AND status = 'reserved'",
            (source, time.time(), socket.gethostname(), os.getpid(), entry_id),
        )

    def _cancel(self, reservation):
        if reservation.entry_id is None:
            return
        with self._write() as con:
            con.execute(
                "DELETE FROM entries WHERE id = ? AND status = 'reserved'",
                (reservation.entry_id,),
            )

    def record(self, event, *, source="release"):
        """Record a release made outside an skdp estimator (checked against the budget).

        Parameters
        ----------
        event : dp_accounting.DpEvent
            What was released (replace-one convention of :mod:`skdp.accounting._events`).
        source : str, default="release"
            Label shown in :meth:`summary`.

        Raises
        ------
        BudgetExceededError
            If the event would take the total over budget (nothing is recorded).

        Examples
        --------
        >>> from skdp.accounting import PrivacyLedger, gaussian_event
        >>> with PrivacyLedger(epsilon=1.0, delta=1e-6) as ledger:
        ...     ledger.record(gaussian_event(8.0, 1.0))
        ...     round(ledger.epsilon_spent(), 3)
        0.504
        """
        with self.reserve(event, source=source) as ticket:
            ticket.commit(event)

    def would_exceed(self, event):
        """Whether recording ``event`` now would exceed the budget (nothing is written).

        Parameters
        ----------
        event : dp_accounting.DpEvent
            A candidate release.

        Returns
        -------
        exceeded : bool
            False when the ledger has no epsilon budget.

        Examples
        --------
        >>> from skdp.accounting import PrivacyLedger, gaussian_event
        >>> with PrivacyLedger(epsilon=1.0) as ledger:
        ...     ledger.would_exceed(gaussian_event(8.0, 1.0)), ledger.would_exceed(
        ...         gaussian_event(1.0, 1.0))
        (False, True)
        """
        con = self._connect()
        try:
            return self._exceeds(self._active_texts(con) + [event_to_json(event)])[0]
        finally:
            con.close()

    # -- reporting -----------------------------------------------------------------------

    def entries(self):
        """The recorded releases (reserved and committed), in order.

        Returns
        -------
        entries : list of LedgerEntry
            One per release.
        """
        return [
            LedgerEntry(i, status, source, self._decode(text, i), t, host, pid)
            for i, status, source, text, t, host, pid in self._read()
        ]

    def __len__(self):
        return len(self._read())

    @property
    def dp_event(self):
        """Composition (canonical order) of every recorded event: the total release."""
        return self._total([row[3] for row in self._read()])

    def epsilon_spent(self, delta=None):
        """Epsilon of the composition of every recorded event.

        For an adaptive ledger, the guarantee its filter proves: the budget's epsilon once
        anything is recorded (a filter has no valid running total; see :attr:`remaining`).

        Parameters
        ----------
        delta : float or None, default=None
            Delta at which epsilon is computed; default: the budget's ``delta`` (the only
            one an adaptive ledger reports at).

        Returns
        -------
        epsilon : float
            0 for an empty ledger; ``inf`` if a non-private fit was recorded.
        """
        if self._filter is None:
            return float(get_epsilon(self.dp_event, self._delta if delta is None else delta))
        if delta is not None and float(delta) != self._delta:
            raise ValueError(
                f"an adaptive ledger's guarantee is its budget (epsilon={self._epsilon:g}, "
                f"delta={self._delta:g}); it reports no epsilon at another delta")
        texts = self._stored_texts()    # a corrupt entry raises, as for an exact ledger
        return 0.0 if not texts else float(self._epsilon)

    def delta_spent(self, epsilon=None):
        """Delta of the composition of every recorded event at ``epsilon``.

        Parameters
        ----------
        epsilon : float or None, default=None
            Default: the budget's epsilon (required when the ledger has no budget).

        Returns
        -------
        delta : float
            Smallest delta such that the total is ``(epsilon, delta)``-DP; for an adaptive
            ledger, the budget's delta once anything is recorded (the filter's guarantee).
        """
        if epsilon is None:
            if self._epsilon is None:
                raise ValueError("the ledger has no epsilon budget: pass epsilon")
            epsilon = self._epsilon
        if self._filter is None:
            return float(get_delta(self.dp_event, epsilon))
        if float(epsilon) != self._epsilon:
            raise ValueError(
                f"an adaptive ledger's guarantee is its budget (epsilon={self._epsilon:g}, "
                f"delta={self._delta:g}); it reports no delta at another epsilon")
        texts = self._stored_texts()
        return 0.0 if not texts else float(self._delta)

    @property
    def remaining(self):
        """Epsilon left at the budget's delta: ``max(0, epsilon - epsilon_spent())``.

        ``inf`` when the ledger has no budget.  For an adaptive ledger: the epsilon (at the
        budget's delta) of the largest Gaussian release its filter still admits.
        """
        if self._epsilon is None:
            return math.inf
        if self._filter is not None:
            return self._filter.gaussian_epsilon_left(self._stored_texts())
        return max(0.0, self._epsilon - self.epsilon_spent())

    def largest_epsilon(self, estimator, X, *, rtol=0.01):
        """The largest ``epsilon`` a fit of ``estimator`` on ``X`` may ask for now.

        :attr:`remaining` answers for a Gaussian release; a fit records its own kind of
        event (objective perturbation's zCDP curve, DP-SGD's subsampled steps, a
        pipeline's releases and model), which costs a different share of the budget --
        under ``adaptive=True`` more so.  This plans the fit at candidate values of its
        ``epsilon`` parameter, with the planner the fit itself reserves with, from public
        quantities only (the estimator's parameters, ``X``'s number of rows and schema;
        no value is read), and returns the largest one the ledger admits, to ``rtol``
        (:mod:`skdp.accounting._headroom`).  Nothing is written.

        Parameters
        ----------
        estimator : estimator
            An skdp DP estimator, ``DPSplineTransformer``, ``DPOneHotEncoder`` or a
            :class:`~skdp.PrivatePipeline`; its other parameters (``delta``, solver,
            bounds) are kept.
        X : array-like, DataFrame or tuple
            The rows the fit will see (read for their number and schema only), or
            ``(n_samples, n_features)`` for an estimator.
        rtol : float, default=0.01
            Relative precision: the answer is at most ``rtol`` below the exact edge.

        Returns
        -------
        epsilon : float
            Admitted as long as nothing else is charged first; ``0.0`` when no fit of
            this estimator is admitted, ``inf`` for a ledger without budget.

        Examples
        --------
        >>> from skdp import DPLogisticRegression
        >>> from skdp.accounting import PrivacyLedger
        >>> with PrivacyLedger(epsilon=1.0, delta=1e-6, adaptive=True) as ledger:
        ...     model = DPLogisticRegression(classes=[0, 1], data_norm=1.0, delta=1e-7)
        ...     round(ledger.remaining, 3), round(ledger.largest_epsilon(model, (4000, 3)), 3)
        (0.898, 0.827)
        """
        from ._headroom import largest_admitted_epsilon

        return largest_admitted_epsilon(self, estimator, X, rtol=rtol)

    def _stored_texts(self):
        """The stored events' JSON texts, each checked decodable (a corrupt entry raises,
        never reads as nothing spent) before the filter reads them."""
        texts = [row[3] for row in self._read()]
        self._check_decodable(texts)
        return texts

    def _check_decodable(self, event_texts):
        """Decode every stored event with :meth:`_decode` (a corrupt entry raises, never
        reads as nothing spent) before the filter reads them."""
        for text in event_texts:
            self._decode(text)

    def _filter_state(self, extra_texts=()):
        """One line: the Rényi divergence and (0, delta) parts the filter has admitted."""
        flt = self._filter
        texts = self._stored_texts() + list(extra_texts)
        self._check_decodable(extra_texts)
        rdp, delta_sum = flt.spent(texts)
        with_new = " with this release" if extra_texts else ""
        return (f"Rényi filter at order {flt.order:g}{with_new}: divergence {rdp:.4g} of "
                f"{flt.budget:.4g} ({100 * rdp / flt.budget:.1f} %), (0, delta) parts "
                f"{delta_sum:.3g} of {flt.delta_reserve:.3g}")

    def summary(self):
        """A readable account: one line per release, the composed total and what is left.

        Returns
        -------
        text : str
            Multi-line report.

        Examples
        --------
        >>> from skdp.accounting import PrivacyLedger, gaussian_event
        >>> with PrivacyLedger(epsilon=2.0, delta=1e-6) as ledger:
        ...     ledger.record(gaussian_event(8.0, 1.0), source="DPStandardScaler")
        ...     ledger.record(gaussian_event(8.0, 1.0), source="DPLogisticRegression")
        ...     print(ledger.summary().splitlines()[-1])
        total: epsilon = 0.7305 at delta = 1e-06 over 2 releases (0 reserved); remaining 1.269
        """
        rows = self._read()
        budget = (
            "no budget" if self._epsilon is None
            else f"budget epsilon = {self._epsilon:g} at delta = {self._delta:g}"
            + (", adaptive" if self._filter is not None else "")
        )
        lines = [f"PrivacyLedger {self._path} ({budget})",
                 f"{'#':>4}  {'status':<9}  {'epsilon alone':>13}  source"]
        for k, (entry_id, status, source, text, *_rest) in enumerate(rows, 1):
            eps = get_epsilon(self._decode(text, entry_id), self._delta)
            lines.append(f"{k:>4}  {status:<9}  {eps:>13.4g}  {source}")
        n_res = sum(r[1] == "reserved" for r in rows)
        if self._filter is not None:
            lines.append(self._filter_state())
            lines.append(
                f"total: the interaction is (epsilon = {self._epsilon:g}, delta = "
                f"{self._delta:g})-DP whatever was chosen adaptively, over {len(rows)} "
                f"releases ({n_res} reserved); a Gaussian release up to epsilon = "
                f"{self.remaining:.4g} still fits")
            return "\n".join(lines)
        spent = float(get_epsilon(self._total([r[3] for r in rows]), self._delta))
        tail = "" if self._epsilon is None else f"; remaining {max(0.0, self._epsilon - spent):.4g}"
        lines.append(
            f"total: epsilon = {spent:.4g} at delta = {self._delta:g} over {len(rows)} "
            f"releases ({n_res} reserved){tail}"
        )
        return "\n".join(lines)

    # -- attaching to estimators ---------------------------------------------------------

    def attach(self, estimator):
        """Set this ledger on every DP estimator inside ``estimator`` and check coverage.

        Sets every parameter named ``privacy_ledger`` (at any depth: pipeline steps, the
        estimator of a search, ...), except inside a procedure that charges its whole
        plan to its own ``privacy_ledger`` -- a :class:`~skdp.PrivatePipeline` (e.g.
        :func:`~skdp.make_private_pipeline`), a
        :class:`~skdp.model_selection.DPGridSearchCV` or
        :class:`~skdp.model_selection.DPRandomizedSearchCV` -- whose own parameter is set
        and whose steps or candidates are left alone (it reserves its planned event before
        reading a row and refuses per-step ledgers that would charge it twice).  Refuses
        paths the ledger cannot account: a step that learns from the data without DP
        (e.g. ``sklearn.preprocessing.StandardScaler``), or an skdp DP transformer without
        a ``privacy_ledger`` parameter outside a private pipeline (e.g.
        :class:`~skdp.preprocessing.DPSplineTransformer` in a plain ``Pipeline``), raises
        ``TypeError``; a meta-estimator that itself computes on the private data
        (``GridSearchCV``'s validation scores and choice of ``best_params_``, stacking...)
        gets a :class:`~skdp.exceptions.PrivacyLeakWarning`: its fits are counted, its own
        computation is not.

        Parameters
        ----------
        estimator : estimator
            An skdp estimator, a ``Pipeline``, a search, ... (modified in place).

        Returns
        -------
        estimator : estimator
            The same object, for chaining.

        Examples
        --------
        >>> from sklearn.pipeline import make_pipeline
        >>> from skdp import DPLogisticRegression
        >>> from skdp.accounting import PrivacyLedger
        >>> from skdp.preprocessing import DPStandardScaler
        >>> ledger = PrivacyLedger(epsilon=2.0)
        >>> pipe = ledger.attach(make_pipeline(
        ...     DPStandardScaler(feature_bounds=(-1, 1)), DPLogisticRegression(data_norm=3.0)))
        >>> pipe[0].privacy_ledger is ledger, pipe[1].privacy_ledger is ledger
        (True, True)
        >>> ledger.close()
        """
        _check_coverage(estimator, type(estimator).__name__)
        keys = _ledger_parameters(estimator)
        if not keys:
            raise TypeError(
                f"{type(estimator).__name__} contains no estimator with a privacy_ledger "
                "parameter: there is nothing for the ledger to account"
            )
        # Shallowest first, so a nested estimator replaced by set_params is handled.
        for key in sorted(keys, key=lambda k: k.count("__")):
            estimator.set_params(**{key: self})
        return estimator


def _charges_its_whole_plan(est):
    """Whether ``est`` charges its whole procedure to its own ``privacy_ledger`` from a
    plan made before any row: a :class:`~skdp.PrivatePipeline` (its plan's event,
    :mod:`skdp._pipeline`) or a private search (:mod:`skdp.model_selection._search`).
    Its steps or candidates carry no ledger of their own (taken off by the pipeline's
    plan, refused by the search): the ledger goes on its own parameter only."""
    from .._pipeline import PrivatePipeline
    from ..model_selection._search import _BaseDPSearch

    return isinstance(est, (PrivatePipeline, _BaseDPSearch))


def _ledger_parameters(estimator):
    """The ``privacy_ledger`` parameters :meth:`PrivacyLedger.attach` sets: every one in
    ``estimator``'s nested parameters, except those strictly inside an estimator that
    charges its whole plan (:func:`_charges_its_whole_plan`), whose own is set instead."""
    params = estimator.get_params(deep=True)
    owners = [key + "__" for key, value in params.items() if _charges_its_whole_plan(value)]
    if _charges_its_whole_plan(estimator):
        owners.append("")
    keys = [k for k in params if k == "privacy_ledger" or k.endswith("__privacy_ledger")]
    return [k for k in keys
            if not any(k.startswith(owner) and k != owner + "privacy_ledger"
                       for owner in owners)]


def _is_skdp_dp_step(est):
    """An skdp estimator or transformer that releases through a DP mechanism (it takes
    ``epsilon`` and ``delta``)."""
    params = est.get_params(deep=False)
    return type(est).__module__.startswith("skdp.") and {"epsilon", "delta"} <= set(params)


def _check_coverage(est, where):
    from sklearn.model_selection._search import BaseSearchCV
    from sklearn.pipeline import FeatureUnion, Pipeline

    from ._fitted import (_is_data_free, container_refusal, selector_refusal,
                          unverified_containers, unverified_selectors)

    if _is_data_free(est) or (isinstance(est, str) and est == "drop"):
        return
    # a subclass of a container can read the whole table between its DP steps: refused
    # wherever it is in the tree (inside a PrivatePipeline too), before anything is walked
    for path, container in unverified_containers(est):
        inner = "".join(f"[{name}]" for name in path.split("__")) if path else ""
        raise container_refusal(where + inner, container)
    if _charges_its_whole_plan(est):
        # before the Pipeline branch (a PrivatePipeline is one): its own plan refuses,
        # before any row, every step that learns without DP, and charges the ledger the
        # whole plan once -- its steps and candidates are not walked for ledgers
        return
    if isinstance(est, Pipeline):
        for name, step in est.steps:
            _check_coverage(step, f"{where}[{name}]")
        return
    if isinstance(est, FeatureUnion):
        for name, trans in est.transformer_list:
            _check_coverage(trans, f"{where}[{name}]")
        return
    if hasattr(est, "transformers") and hasattr(est, "remainder"):  # ColumnTransformer
        # a selector that can read the rows routes one row's information to a DP step
        # without noise: the ledger cannot account it
        found = unverified_selectors(est)
        if found:
            raise selector_refusal(where, *found[0])
        for name, trans, _ in list(est.transformers) + [("remainder", est.remainder, None)]:
            _check_coverage(trans, f"{where}[{name}]")
        return
    if not hasattr(est, "get_params"):
        raise TypeError(f"{where}: {est!r} is not an estimator")
    params = est.get_params(deep=False)
    if "privacy_ledger" in params:
        return
    if _is_skdp_dp_step(est):
        raise TypeError(
            f"{where}: {type(est).__name__} is differentially private, but it has no "
            "privacy_ledger parameter, so a ledger attached here cannot charge its release "
            "(the ledger would under-count it). Fit it inside a private pipeline, which "
            "charges its whole plan to one ledger before the first release: "
            "skdp.make_private_pipeline(...) or skdp.PrivatePipeline(steps, epsilon=..., "
            "privacy_ledger=ledger) (attach sets that parameter)."
        )
    nested = {k: v for k, v in params.items() if hasattr(v, "fit") and hasattr(v, "get_params")}
    if nested:
        if not type(est).__module__.startswith("skdp."):
            detail = (
                "the validation scores in cv_results_ and the choice of best_params_ are "
                "computed on held-out private rows without DP"
                if isinstance(est, BaseSearchCV)
                else f"whatever {type(est).__name__} computes from the private data itself"
            )
            warnings.warn(
                f"{where}: the ledger counts the fits of the DP estimators inside "
                f"{type(est).__name__}, not its own use of the data: {detail}. Use "
                "skdp.model_selection for private model selection.",
                PrivacyLeakWarning,
                stacklevel=user_stacklevel(),
            )
        for k, v in nested.items():
            _check_coverage(v, f"{where}.{k}")
        return
    raise TypeError(
        f"{where}: {type(est).__name__} learns from the data without differential privacy "
        "and has no privacy_ledger parameter, so the ledger cannot account it (it voids the "
        "guarantee of everything fitted after it). Use a DP transformer such as "
        "skdp.preprocessing.DPStandardScaler or a data-free one (for a function, "
        "skdp.preprocessing.RowwiseFunctionTransformer applies it to one row at a time)."
    )
