#!/usr/bin/env python3
"""An order and the shipment it asks for, committed together or not at all, from Python.

The application writes its own row and enqueues the operation with the schema's
oprec_enqueue(kind, payload, options) inside one transaction it owns (psycopg 3), so there is
no dual write: no order whose shipment was lost because the process died after the commit, no
shipment for an order that rolled back. The operation exists if and only if the transaction
commits; the scheduler of a running `oprec worker` wakes it (no broker is called from SQL).

    python3 -m venv .venv && .venv/bin/pip install -r requirements.txt
    OPREC_DATABASE_URL=postgres://app@db/app .venv/bin/python enqueue.py --kind shipment.create

The schema must be migrated (`oprec migrate`) and a worker that runs the kind must have started
once: workers publish their kinds' policies, and oprec_enqueue refuses a kind none published
(SQLSTATE OQ001). With the demo worker (`oprec worker --demo`), pass `--kind demo.noop`. The
schema is the session's search path: `PGOPTIONS='-c search_path=oprec'`, `?options=-csearch_path%3Doprec`
in the URL, or the role's own (`ALTER ROLE app SET search_path = oprec`).

It places order N (committed, with its operation), order N+1 (rolled back: neither row is
left), repeats order N's enqueue (its idempotency key returns the same operation), checks all
three in the database, and prints what it did as one line of JSON. Exit 1 when a check fails.
"""

import argparse
import json
import os
import sys
import time

import psycopg
from psycopg.types.json import Jsonb

ORDERS = """
CREATE TABLE IF NOT EXISTS orders (
    id         bigint      PRIMARY KEY,
    placed_at  timestamptz NOT NULL DEFAULT now()
)
"""


def place_order(conn, kind, order, commit):
    """Inserts the order and enqueues its shipment in one transaction; commits it when `commit`
    is true and rolls it back otherwise (as a failed validation after the insert would).
    Returns the operation's id (a uuid) when it committed, else None."""
    with conn.transaction() as tx:
        conn.execute("INSERT INTO orders (id) VALUES (%s)", (order,))
        (operation,) = conn.execute(
            "SELECT oprec_enqueue(%s, %s, %s)",
            (
                kind,
                Jsonb({"order": order}),
                # A retry of the same request finds the operation instead of making a second.
                Jsonb({"idempotency_key": f"order-{order}"}),
            ),
        ).fetchone()
        if not commit:
            raise psycopg.Rollback(tx)  # the order and its operation both go
    return operation if commit else None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--database-url",
        default=os.environ.get("OPREC_DATABASE_URL") or os.environ.get("DATABASE_URL"),
        help="PostgreSQL URL (default: $OPREC_DATABASE_URL, then $DATABASE_URL)",
    )
    parser.add_argument("--kind", default="shipment.create", help="the operation kind")
    parser.add_argument(
        "--order",
        type=int,
        default=int(time.time() * 1000),
        help="the committed order's number; N+1 is the rolled-back one (default: now in ms)",
    )
    args = parser.parse_args()
    if not args.database_url:
        parser.error("give --database-url, or set OPREC_DATABASE_URL or DATABASE_URL")

    # autocommit: each `with conn.transaction()` block is one transaction, BEGIN to COMMIT.
    with psycopg.connect(args.database_url, autocommit=True) as conn:
        conn.execute(ORDERS)
        try:
            kept = place_order(conn, args.kind, args.order, commit=True)
            place_order(conn, args.kind, args.order + 1, commit=False)
            (repeat,) = conn.execute(
                "SELECT oprec_enqueue(%s, %s, %s)",
                (args.kind, Jsonb({"order": args.order}), Jsonb({"idempotency_key": f"order-{args.order}"})),
            ).fetchone()
        except psycopg.Error as e:
            # oprec_enqueue's refusals carry SQLSTATEs of class OQ (OQ001 unknown kind, OQ002
            # payload too large, OQ003 invalid payload, OQ004 unknown option, OQ005 bad value).
            diag = e.diag
            print(f"enqueue.py: {e.sqlstate}: {diag.message_primary}", file=sys.stderr)
            if diag.message_hint:
                print(f"enqueue.py: hint: {diag.message_hint}", file=sys.stderr)
            return 2 if (e.sqlstate or "").startswith("OQ") else 1

        (orders,) = conn.execute(
            "SELECT count(*) FROM orders WHERE id IN (%s, %s)", (args.order, args.order + 1)
        ).fetchone()
        (operations,) = conn.execute(
            "SELECT count(*) FROM operations WHERE kind = %s AND idempotency_key IN (%s, %s)",
            (args.kind, f"order-{args.order}", f"order-{args.order + 1}"),
        ).fetchone()
        checks = {
            "the committed order and its operation are there, the rolled-back ones are not": orders == 1
            and operations == 1,
            "the repeated idempotency key returned the same operation": repeat == kept,
        }
        print(
            json.dumps(
                {
                    "producer": "python",
                    "kind": args.kind,
                    "committed": {"order": args.order, "operation": str(kept)},
                    "rolled_back": {"order": args.order + 1},
                    "repeat": str(repeat),
                }
            )
        )
        failed = [what for what, ok in checks.items() if not ok]
        for what in failed:
            print(f"enqueue.py: check failed: {what}", file=sys.stderr)
        return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
