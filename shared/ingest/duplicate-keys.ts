/**
 * JSON.parse keeps the last of two equal keys and says nothing, so `{"amount":1,"amount":2}`
 * would bill 2 for a record the client may have meant as 1. duplicateKeys finds the keys of a
 * record's top-level object that occur more than once, comparing them decoded (`"\u0061mount"`
 * is `amount`). It scans text that JSON.parse has already accepted, so it needs no error paths.
 */
export function duplicateKeys(text: string): string[] {
  const seen = new Set<string>();
  const out: string[] = [];
  let depth = 0;
  let expectKey = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      const start = i;
      let escaped = false;
      for (i++; i < text.length; i++) {
        const d = text.charCodeAt(i);
        if (d === 0x5c) {
          escaped = true;
          i++;
        } else if (d === 0x22) break;
      }
      if (depth === 1 && expectKey) {
        expectKey = false;
        const key = escaped ? (JSON.parse(text.slice(start, i + 1)) as string) : text.slice(start + 1, i);
        if (!seen.has(key)) seen.add(key);
        else if (!out.includes(key)) out.push(key);
      }
    } else if (c === 0x7b || c === 0x5b) {
      depth++;
      if (depth === 1) expectKey = c === 0x7b;
    } else if (c === 0x7d || c === 0x5d) depth--;
    else if (c === 0x2c && depth === 1) expectKey = true;
  }
  return out;
}
