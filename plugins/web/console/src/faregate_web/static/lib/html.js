// htm turns tagged templates into Preact elements at run time: no JSX, no build step.
import { h } from 'preact'
import htm from 'htm'

export const html = htm.bind(h)
