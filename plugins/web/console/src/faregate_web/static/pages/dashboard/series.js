// The dashboard's figures: /api/data rows (per model, key and hour) summed into time
// buckets and series, the biggest few named and the rest as one "other" series.

export const RANGES = { day: 86400, week: 7 * 86400, month: 30 * 86400 }
export const METRICS = ['quota', 'count', 'token_used']
const MAX_SERIES = 8

/** The time buckets' length: hours up to a week, then local days. */
export const stepOf = range => (RANGES[range] > RANGES.week ? 86400 : 3600)

function bucketOf (ts, step) {
  if (step < 86400) return Math.floor(ts / step) * step
  const day = new Date(ts * 1000)
  day.setHours(0, 0, 0, 0)
  return Math.floor(day.getTime() / 1000)
}

/** Every bucket from start to end, so a quiet hour draws as zero, not as a gap. */
export function buckets (start, end, step) {
  const xs = []
  for (let x = bucketOf(start, step); x <= end; x = step < 86400 ? x + step : bucketOf(x + 86400 + 7200, step)) xs.push(x)
  return xs
}

/**
 * rows → [{label, values, total, count, quota, token_used}] by `keyOf(row)`, the largest
 * (by `metric`) first; past MAX_SERIES - 1 the rest sum into one series named `otherLabel`.
 */
export function seriesBy (rows, keyOf, xs, step, metric, otherLabel) {
  const index = new Map(xs.map((x, i) => [x, i]))
  const groups = new Map()
  for (const row of rows) {
    const key = keyOf(row)
    let group = groups.get(key)
    if (!group) {
      group = { label: key, values: xs.map(() => 0), total: 0, count: 0, quota: 0, token_used: 0 }
      groups.set(key, group)
    }
    const i = index.get(bucketOf(row.created_at, step))
    if (i !== undefined) group.values[i] += row[metric]
    group.total += row[metric]
    for (const m of METRICS) group[m] += row[m]
  }
  const all = [...groups.values()].sort((a, b) => b.total - a.total || String(a.label).localeCompare(b.label))
  if (all.length <= MAX_SERIES) return all
  const kept = all.slice(0, MAX_SERIES - 1)
  const other = { label: otherLabel, values: xs.map(() => 0), total: 0, count: 0, quota: 0, token_used: 0 }
  for (const group of all.slice(MAX_SERIES - 1)) {
    group.values.forEach((v, i) => { other.values[i] += v })
    other.total += group.total
    for (const m of METRICS) other[m] += group[m]
  }
  return [...kept, other]
}
