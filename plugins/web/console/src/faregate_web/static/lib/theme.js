// Light, dark or the system's choice (prefers-color-scheme), kept in localStorage.
export const THEMES = ['auto', 'light', 'dark']

export function currentTheme () {
  const saved = localStorage.getItem('theme')
  return THEMES.includes(saved) ? saved : 'auto'
}

export function applyTheme (theme) {
  localStorage.setItem('theme', theme)
  if (theme === 'auto') delete document.documentElement.dataset.theme
  else document.documentElement.dataset.theme = theme
}

applyTheme(currentTheme())
