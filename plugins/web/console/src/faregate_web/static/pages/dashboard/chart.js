// A labelled time-series chart (uPlot on a canvas) for the dashboard: colours from the
// CSS variables (redrawn when the theme changes), width from its container (redrawn when
// the window resizes), and beside it a table of the same figures for screen readers and
// for anyone who would rather read numbers.
import { useEffect, useRef, useState } from 'preact/hooks'
import uPlot from 'uplot'
import { html } from '../../lib/html.js'
import { lang } from '../../lib/i18n.js'
import { Table } from '../../lib/ui.js'

const PALETTE = 8

/** The theme's colours as the stylesheet sets them now (light or dark). */
export function themeColors () {
  const style = getComputedStyle(document.documentElement)
  const v = name => style.getPropertyValue(name).trim()
  return {
    text: v('--text'),
    muted: v('--muted'),
    grid: v('--border'),
    series: Array.from({ length: PALETTE }, (_, i) => v(`--chart-${i + 1}`) || v('--accent'))
  }
}

/** A counter that changes when the theme does (the user's choice or the system's). */
export function useThemeTick () {
  const [tick, setTick] = useState(0)
  useEffect(() => {
    const bump = () => setTick(n => n + 1)
    const observer = new MutationObserver(bump)
    observer.observe(document.documentElement, { attributes: true, attributeFilter: ['data-theme'] })
    const media = window.matchMedia('(prefers-color-scheme: dark)')
    media.addEventListener('change', bump)
    return () => { observer.disconnect(); media.removeEventListener('change', bump) }
  }, [])
  return tick
}

const chartHeight = width => (width < 520 ? 220 : 300)

/**
 * xs: bucket start times (unix seconds); series: [{label, values, total}]; format: a value's
 * text; step: the bucket's length in seconds (its time label shows the hour or the day);
 * columns: the summary table's columns over `series` rows.
 */
export function UsageChart ({ id, caption, xs, series, format, step, columns, emptyText }) {
  const box = useRef(null)
  const tick = useThemeTick()
  const empty = !series.length
  useEffect(() => {
    const el = box.current
    if (!el || empty) return
    const colors = themeColors()
    const when = step >= 86400
      ? ts => new Date(ts * 1000).toLocaleDateString(lang())
      : ts => new Date(ts * 1000).toLocaleString(lang(), { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' })
    const axis = {
      stroke: colors.muted,
      grid: { stroke: colors.grid, width: 1 },
      ticks: { stroke: colors.grid, width: 1 }
    }
    const width = Math.max(240, el.clientWidth)
    const plot = new uPlot({
      width,
      height: chartHeight(width),
      scales: { x: { time: true } },
      cursor: { drag: { x: false, y: false } },
      series: [
        { label: '', value: (u, ts) => (ts == null ? '—' : when(ts)) },
        ...series.map((s, i) => ({
          label: s.label,
          stroke: colors.series[i % PALETTE],
          width: 2,
          points: { show: xs.length <= 48 },
          value: (u, v) => (v == null ? '—' : format(v))
        }))
      ],
      axes: [
        { ...axis },
        { ...axis, size: 72, values: (u, values) => values.map(format) }
      ]
    }, [xs, ...series.map(s => s.values)], el)
    let frame = 0
    const resize = new ResizeObserver(() => { // next frame: never a resize inside the observer's loop
      cancelAnimationFrame(frame)
      frame = requestAnimationFrame(() => {
        const w = Math.max(240, el.clientWidth)
        if (w !== plot.width) plot.setSize({ width: w, height: chartHeight(w) })
      })
    })
    resize.observe(el)
    return () => { resize.disconnect(); cancelAnimationFrame(frame); plot.destroy() }
  }, [xs, series, tick, empty])

  return html`<figure class="usage-chart panel" id=${id} aria-labelledby=${`${id}-caption`}>
    <figcaption id=${`${id}-caption`}>${caption}</figcaption>
    ${empty
      ? html`<p class="empty">${emptyText}</p>`
      : html`<div class="chart-box" ref=${box} role="img" aria-label=${caption}></div>
        <${Table} caption=${caption} columns=${columns} rows=${series} rowKey=${s => s.label} />`}
  </figure>`
}
