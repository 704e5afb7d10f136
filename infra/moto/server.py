"""moto in server mode, for the local stack and the tests.

One change to moto 5.2.6 (the pin in infra/requirements-demo.txt), made
here rather than in the virtualenv: its
DynamoDB `TransactWriteItems` deep-copies every table it touches before each
transaction (for rollback) without a lock. That costs O(table size) per call,
so a 90-day backfill of a few thousand spend rows took minutes, and two
transactions at once crash the server ("dictionary changed size during
iteration"). This version keeps moto's semantics, all-or-nothing with a
cancellation reason per item, but checks every condition before it writes
anything, snapshots only the items it touches, and holds one lock over the
DynamoDB backend so concurrent requests see each transaction whole.

A second change, for SQS: moto's queue checks each message's visibility
with a clock that builds two datetimes per call, and a receive looks at
every message many times, so one receive from a queue of 500 messages took
half a second. The SQS models here read the same wall clock with
time.time(); nothing else about the queues changes.

A third, for SQS's safety: moto's queues take no lock, and the server
answers each request on its own thread. Two receives from one queue at once
(two pollers, as Lambda scales a mapping out) iterate its set of in-flight
messages while the other adds to it, and one of them crashes with a 500
("Set changed size during iteration"); the SDK's retries hide most of these,
but the 10,000-conversion fault run (`make fault-run`) failed on one. SQS
itself never fails so, nor hands one message to two receives at once. Each
SQS call here holds one lock over the backend, given up while a long poll
waits, so a send can still come in and wake it.

Three more changes, each for speed alone, found by profiling a test run
with py-spy (a third of its samples, many of them threads waiting on the
log's lock; the whole e2e suite went from about 920 s to 890 s):
- a receive checked each message's retention by asking for the queue's
  attributes, which counts every message of the queue each time: the check
  here reads the retention period itself;
- each request listed moto's package folder from disk to find its backend:
  the list is read once;
- werkzeug logged a line a request ("POST / 200") to the server's log: only
  warnings and errors are logged now.

Each change replaces or wraps one of moto's internals, which a new moto may
rename or rework without a word: the server refuses to start on any other
version than the one the changes were checked against (PATCHED_FOR), so a
bumped pin fails loudly until someone has read them again.

Usage: python infra/moto/server.py -H 127.0.0.1 -p PORT (moto_server's flags).
"""

import copy
import functools
import logging
import os
import sys
import threading
import time

import moto

PATCHED_FOR = "5.2.6"
if moto.__version__ != PATCHED_FOR:
    sys.exit(
        f"infra/moto/server.py patches moto {PATCHED_FOR}'s internals, and this "
        f"is moto {moto.__version__}: check each change against it, then set "
        "PATCHED_FOR to the version infra/requirements-demo.txt pins"
    )

from moto.dynamodb.comparisons import get_filter_expression  # noqa: E402
from moto.dynamodb.exceptions import (  # noqa: E402
    MultipleTransactionsException,
    TooManyTransactionsException,
    TransactionCanceledException,
    TransactWriteSingleOpException,
)
from moto.dynamodb.models import DynamoDBBackend  # noqa: E402
from moto.server import main  # noqa: E402

LOCK = threading.RLock()


def locked(method):
    @functools.wraps(method)
    def wrapper(*args, **kwargs):
        with LOCK:
            return method(*args, **kwargs)

    return wrapper


def _key_of(backend, op_type, op):
    if op_type == "Put":
        table = backend.get_table(op["TableName"])
        attrs = op["Item"]
        key = {table.hash_key_attr: attrs[table.hash_key_attr]}
        if table.range_key_attr is not None:
            key[table.range_key_attr] = attrs[table.range_key_attr]
        return key
    return op["Key"]


def transact_write_items(self, transact_items):
    if len(transact_items) > 100:
        raise TooManyTransactionsException()
    seen = set()
    plan = []
    errors = []
    # Phase 1: every condition against the state before the transaction.
    for item in transact_items:
        if len(item) > 1:
            raise TransactWriteSingleOpException
        op_type, op = next(iter(item.items()))
        if op_type not in {"ConditionCheck", "Put", "Delete", "Update"}:
            raise ValueError("Unsupported transaction operation")
        key = _key_of(self, op_type, op)
        unique = (str(op["TableName"]), str(dict(sorted(key.items()))))
        if unique in seen:
            raise MultipleTransactionsException()
        seen.add(unique)
        current = self.get_item(op["TableName"], key)
        condition = op.get("ConditionExpression")
        failed = None
        if condition is not None:
            check = get_filter_expression(
                condition, op.get("ExpressionAttributeNames"), op.get("ExpressionAttributeValues")
            )
            if not check.expr(current):
                old = None
                if op.get("ReturnValuesOnConditionCheckFailure") == "ALL_OLD" and current:
                    old = current.to_json()["Attributes"]
                failed = ("ConditionalCheckFailed", "The conditional request failed", old)
        errors.append(failed or (None, None, None))
        plan.append((op_type, op, key, copy.deepcopy(current.to_json()["Attributes"]) if current else None))
    if any(code is not None for code, _, _ in errors):
        raise TransactionCanceledException(errors)
    # Phase 2: the writes, undone item by item if one of them fails.
    done = []
    try:
        for op_type, op, key, before in plan:
            names, values = op.get("ExpressionAttributeNames"), op.get("ExpressionAttributeValues")
            if op_type == "Put":
                self.put_item(op["TableName"], op["Item"])
            elif op_type == "Delete":
                self.delete_item(op["TableName"], key)
            elif op_type == "Update":
                self.update_item(
                    op["TableName"],
                    key,
                    update_expression=op["UpdateExpression"],
                    condition_expression=None,
                    expression_attribute_names=names,
                    expression_attribute_values=values,
                )
            if op_type != "ConditionCheck":
                done.append((op["TableName"], key, before))
    except Exception:
        for table_name, key, before in reversed(done):
            if before is None:
                self.delete_item(table_name, key)
            else:
                self.put_item(table_name, before)
        raise


DynamoDBBackend.transact_write_items = locked(transact_write_items)
for name in ("put_item", "get_item", "query", "scan", "update_item", "delete_item", "batch_get_item", "batch_write_item"):
    setattr(DynamoDBBackend, name, locked(getattr(DynamoDBBackend, name)))


# The same clock as moto.core.utils.unix_time(_millis), without datetimes.
import moto.sqs.models as sqs_models  # noqa: E402

sqs_models.unix_time = time.time
sqs_models.unix_time_millis = lambda: time.time() * 1000.0


def is_message_valid_based_on_retention_period(self, queue_name, message):
    """moto's check, reading the one attribute it needs rather than all of
    them (which counts the queue's messages)."""
    retention = self.get_queue(queue_name).message_retention_period
    return retention + message.sent_timestamp / 1000 > time.time()


sqs_models.SQSBackend.is_message_valid_based_on_retention_period = is_message_valid_based_on_retention_period

# One SQS call at a time (the docstring's third change). Not reentrant, so
# that a long poll can give the lock up whole while it waits; a call made
# from within another (a batch's delete calling delete_message) runs under
# the lock its caller holds.
SQS_LOCK = threading.Lock()
_sqs_held = threading.local()


def sqs_locked(method):
    @functools.wraps(method)
    def wrapper(*args, **kwargs):
        if getattr(_sqs_held, "held", False):
            return method(*args, **kwargs)
        with SQS_LOCK:
            _sqs_held.held = True
            try:
                return method(*args, **kwargs)
            finally:
                _sqs_held.held = False

    return wrapper


for name in (
    "create_queue",
    "get_queue_url",
    "list_queues",
    "get_queue",
    "delete_queue",
    "get_queue_attributes",
    "set_queue_attributes",
    "send_message",
    "send_message_batch",
    "receive_message",
    "delete_message",
    "delete_message_batch",
    "change_message_visibility",
    "change_message_visibility_batch",
    "purge_queue",
    "list_dead_letter_source_queues",
    "tag_queue",
    "untag_queue",
    "list_queue_tags",
):
    setattr(sqs_models.SQSBackend, name, sqs_locked(getattr(sqs_models.SQSBackend, name)))

_wait_for_messages = sqs_models.Queue.wait_for_messages


def wait_for_messages(self, timeout):
    """moto's long-poll wait, without the backend's lock: a send (which
    takes the lock, then wakes this queue's waiters) must be able to come
    in meanwhile. The lock is taken again before the receive looks at the
    queue."""
    if not getattr(_sqs_held, "held", False):
        return _wait_for_messages(self, timeout)
    _sqs_held.held = False
    SQS_LOCK.release()
    try:
        return _wait_for_messages(self, timeout)
    finally:
        SQS_LOCK.acquire()
        _sqs_held.held = True


sqs_models.Queue.wait_for_messages = wait_for_messages

# moto's package folders, listed from disk once rather than at each request.
import moto.backends as moto_backends  # noqa: E402

_MODULES = tuple(moto_backends.list_of_moto_modules())
moto_backends.list_of_moto_modules = lambda: _MODULES

# werkzeug's access line a request: a write under the log's lock, read by nobody.
logging.getLogger("werkzeug").setLevel(logging.WARNING)


def exit_with_parent():
    """Ends the server when the process that started it is gone, so a test
    run that dies never leaves an emulator behind."""
    parent = int(os.environ.get("ADTRAIL_MOTO_PARENT", "0"))
    if parent <= 0:
        return

    def watch():
        while True:
            try:
                os.kill(parent, 0)
            except OSError:
                os._exit(0)
            time.sleep(1)

    threading.Thread(target=watch, daemon=True).start()


if __name__ == "__main__":
    exit_with_parent()
    sys.exit(main())
