import { setFlagsFromString } from 'node:v8'

// Start-up keeps nearly everything it allocates (the route table, schemas, validators), which
// makes V8 grow the young generation to its largest: about 20 MB that an idle process then holds
// empty. Imported first by src/main.ts, so it applies before the rest is loaded; the young
// generation keeps its initial size until `growWithLoad` (docs/decisions.md, D42).
setFlagsFromString('--semi-space-growth-factor=1')

/** V8's default again: from now on the young generation grows with the load, as it would have. */
export function growWithLoad(): void {
  setFlagsFromString('--semi-space-growth-factor=2')
}
