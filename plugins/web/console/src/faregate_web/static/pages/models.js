// Models (admin), as new-api's model management: two tabs, model metadata (with the
// models channels serve that have none, and the upstream sync) and vendors.
import { useRef, useState } from 'preact/hooks'
import { html } from '../lib/html.js'
import { api } from '../lib/api.js'
import { ErrorText, Page, useAsync } from '../lib/ui.js'
import { strings, t } from './models/strings.js'
import { ModelsTab } from './models/models-tab.js'
import { VendorsTab } from './models/vendors-tab.js'

export { strings }

/** Every vendor (for the model form's select and the vendor column): all pages. */
async function allVendors () {
  const out = []
  for (let p = 1; p <= 20; p++) {
    const data = await api('/api/vendors/', { params: { p, page_size: 100 } })
    out.push(...data.items)
    if (out.length >= data.total || data.items.length === 0) break
  }
  return out.sort((a, b) => a.name.localeCompare(b.name))
}

const TABS = [['models', 'tabModels'], ['vendors', 'tabVendors']]

/** A tablist (arrow keys, Home and End move between tabs, as WAI-ARIA's pattern). */
function Tabs ({ current, onPick }) {
  const refs = useRef({})
  const key = e => {
    const i = TABS.findIndex(([id]) => id === current)
    const next = { ArrowRight: i + 1, ArrowLeft: i - 1, Home: 0, End: TABS.length - 1 }[e.key]
    if (next === undefined) return
    e.preventDefault()
    const [id] = TABS[(next + TABS.length) % TABS.length]
    onPick(id)
    refs.current[id]?.focus()
  }
  return html`<div class="adm-tabs" role="tablist" aria-label=${t('title')} onKeyDown=${key}>
    ${TABS.map(([id, label]) => html`<button type="button" role="tab" id=${`tab-${id}`} key=${id}
        ref=${el => { refs.current[id] = el }} aria-selected=${current === id} aria-controls=${`panel-${id}`}
        tabindex=${current === id ? 0 : -1} onClick=${() => onPick(id)}>${t(label)}</button>`)}
  </div>`
}

export default function Models () {
  const [tab, setTab] = useState('models')
  const vendors = useAsync(allVendors, [])
  return html`<${Page} title=${t('title')}>
    <${Tabs} current=${tab} onPick=${setTab} />
    <${ErrorText} error=${vendors.error} />
    <div role="tabpanel" id=${`panel-${tab}`} aria-labelledby=${`tab-${tab}`} class="adm-tab-panel">
      ${tab === 'models'
        ? html`<${ModelsTab} vendors=${vendors.data || []} onVendorsChanged=${vendors.reload} />`
        : html`<${VendorsTab} onChanged=${vendors.reload} />`}
    </div>
  </${Page}>`
}
