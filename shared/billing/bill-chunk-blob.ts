/**
 * The map step's reading and billing of one chunk blob, fused: the inflated text is read in
 * place and each canonical line goes straight into the biller, with no transaction or
 * billing-line objects in between (they were most of the map step's garbage). A line that is
 * not canonical, or a blob without a checksum, takes the full path (JSON.parse, validation).
 */
import type { TaxRates } from '../config/tax-rates';
import { newSpans, readCanonical } from '../model/canonical';
import { forEachLine, inflateChunk, parseLine } from '../model/chunk-codec';
import { type ChunkBill, ChunkBiller } from './bill';

export function billChunkBlob(body: Buffer, expectedSha256: string | undefined, rates: TaxRates): ChunkBill & { count: number } {
  const { text, verified } = inflateChunk(body, expectedSha256);
  const biller = new ChunkBiller(rates);
  const at = newSpans();
  let count = 0;
  forEachLine(text, (start, end, n) => {
    count++;
    if (!verified || !readCanonical(text, start, end, at)) {
      biller.addTransaction(parseLine(text.slice(start, end), n));
      return;
    }
    const region = at.regionStart < 0 ? undefined : text.slice(at.regionStart, at.regionEnd);
    biller.add(text.slice(start, at.accountEnd), text.slice(at.accountStart, at.accountEnd), text.slice(at.currencyStart, at.currencyStart + 3), at.charge, at.amount, region);
  });
  return { ...biller.finish(), count };
}
