#!/usr/bin/env node
// An order and the shipment it asks for, committed together or not at all, from Node.js.
//
// The application writes its own row and enqueues the operation with the schema's
// oprec_enqueue(kind, payload, options) inside one transaction it owns (node-postgres), so there
// is no dual write: no order whose shipment was lost because the process died after the commit,
// no shipment for an order that rolled back. The operation exists if and only if the
// transaction commits; the scheduler of a running `oprec worker` wakes it (no broker is called
// from SQL).
//
//     npm ci
//     OPREC_DATABASE_URL=postgres://app@db/app node enqueue.js --kind shipment.create
//
// The schema must be migrated (`oprec migrate`) and a worker that runs the kind must have
// started once: workers publish their kinds' policies, and oprec_enqueue refuses a kind none
// published (SQLSTATE OQ001). With the demo worker (`oprec worker --demo`), pass
// `--kind demo.noop`. The schema is the session's search path: PGOPTIONS='-c search_path=oprec',
// or the role's own (ALTER ROLE app SET search_path = oprec).
//
// It places order N (committed, with its operation), order N+1 (rolled back: neither row is
// left), repeats order N's enqueue (its idempotency key returns the same operation), checks all
// three in the database, and prints what it did as one line of JSON. Exit 1 when a check fails.

'use strict'

const { Client } = require('pg')
const { parseArgs } = require('node:util')

const ORDERS = `
CREATE TABLE IF NOT EXISTS orders (
    id         bigint      PRIMARY KEY,
    placed_at  timestamptz NOT NULL DEFAULT now()
)`

// JSON goes as text cast to jsonb: node-postgres would send a JavaScript array as a PostgreSQL
// array, not as JSON.
const ENQUEUE = 'SELECT oprec_enqueue($1, $2::jsonb, $3::jsonb) AS id'

/** Enqueues one operation on `client`, in whatever transaction it is in; resolves to its id. */
async function enqueue (client, kind, payload, options) {
  const { rows } = await client.query(ENQUEUE, [kind, JSON.stringify(payload), JSON.stringify(options)])
  return rows[0].id
}

/**
 * Inserts the order and enqueues its shipment in one transaction; commits it when `commit` is
 * true and rolls it back otherwise (as a failed validation after the insert would). Resolves to
 * the operation's id when it committed, else null.
 */
async function placeOrder (client, kind, order, commit) {
  await client.query('BEGIN')
  try {
    await client.query('INSERT INTO orders (id) VALUES ($1)', [order])
    // A retry of the same request finds the operation instead of making a second.
    const id = await enqueue(client, kind, { order }, { idempotency_key: `order-${order}` })
    await client.query(commit ? 'COMMIT' : 'ROLLBACK') // ROLLBACK: the order and its operation both go
    return commit ? id : null
  } catch (e) {
    await client.query('ROLLBACK')
    throw e
  }
}

async function main () {
  const { values } = parseArgs({
    options: {
      'database-url': { type: 'string', default: process.env.OPREC_DATABASE_URL || process.env.DATABASE_URL || '' },
      kind: { type: 'string', default: 'shipment.create' },
      order: { type: 'string', default: String(Date.now()) }
    }
  })
  const url = values['database-url']
  const order = Number(values.order)
  if (!url) throw new UsageError('give --database-url, or set OPREC_DATABASE_URL or DATABASE_URL')
  if (!Number.isSafeInteger(order)) throw new UsageError(`--order must be a whole number, not ${values.order}`)
  const kind = values.kind

  const client = new Client({ connectionString: url })
  await client.connect()
  try {
    await client.query(ORDERS)
    let kept, repeat
    try {
      kept = await placeOrder(client, kind, order, true)
      await placeOrder(client, kind, order + 1, false)
      repeat = await enqueue(client, kind, { order }, { idempotency_key: `order-${order}` })
    } catch (e) {
      // oprec_enqueue's refusals carry SQLSTATEs of class OQ (OQ001 unknown kind, OQ002 payload
      // too large, OQ003 invalid payload, OQ004 unknown option, OQ005 bad value).
      if (typeof e.code === 'string' && e.code.startsWith('OQ')) {
        console.error(`enqueue.js: ${e.code}: ${e.message}`)
        if (e.hint) console.error(`enqueue.js: hint: ${e.hint}`)
        return 2
      }
      throw e
    }

    const orders = await client.query('SELECT count(*)::int AS n FROM orders WHERE id IN ($1, $2)', [order, order + 1])
    const operations = await client.query(
      'SELECT count(*)::int AS n FROM operations WHERE kind = $1 AND idempotency_key IN ($2, $3)',
      [kind, `order-${order}`, `order-${order + 1}`]
    )
    const checks = {
      'the committed order and its operation are there, the rolled-back ones are not':
        orders.rows[0].n === 1 && operations.rows[0].n === 1,
      'the repeated idempotency key returned the same operation': repeat === kept
    }
    console.log(JSON.stringify({
      producer: 'node',
      kind,
      committed: { order, operation: kept },
      rolled_back: { order: order + 1 },
      repeat
    }))
    const failed = Object.entries(checks).filter(([, ok]) => !ok).map(([what]) => what)
    for (const what of failed) console.error(`enqueue.js: check failed: ${what}`)
    return failed.length ? 1 : 0
  } finally {
    await client.end()
  }
}

class UsageError extends Error {}

main().then(
  (code) => { process.exitCode = code },
  (e) => {
    console.error(`enqueue.js: ${e.message}`)
    process.exitCode = e instanceof UsageError ? 2 : 1
  }
)
