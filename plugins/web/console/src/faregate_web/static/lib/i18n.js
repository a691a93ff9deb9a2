// English and Simplified Chinese. Each page keeps its own strings beside its code
// (`export const strings = {en: {...}, 'zh-CN': {...}}`) and asks `translator(strings)`
// for its `t`; lib/strings.js holds the shared ones. A missing Chinese string falls back
// to English, a missing English one shows its key (tests check there are none).

export const LANGUAGES = [['en', 'English'], ['zh-CN', '简体中文']]

function initial () {
  const saved = localStorage.getItem('lang')
  if (LANGUAGES.some(([code]) => code === saved)) return saved
  return (navigator.languages || [navigator.language]).some(l => /^zh/i.test(l || '')) ? 'zh-CN' : 'en'
}

let current = initial()
document.documentElement.lang = current

export const lang = () => current

export function setLang (code) {
  current = code
  localStorage.setItem('lang', code)
  document.documentElement.lang = code
}

export function translator (table) {
  return (key, vars) => {
    let text = table[current]?.[key] ?? table.en[key] ?? key
    if (vars) text = text.replace(/\{(\w+)\}/g, (whole, name) => (name in vars ? String(vars[name]) : whole))
    return text
  }
}
