// LoCoMo conversations through the JavaScript host exactly as `mnemo-lab eval
// locomo` feeds the native host (lab/src/eval.rs): one namespace per
// conversation, one session per LoCoMo session, the session's date plus a
// second per turn as event time, `Speaker: text [shares caption]` as the
// turn, the dia_id in its attributes; every question of categories 1–4
// asked as a dry recall over episodes.

const MONTHS = [
  'january', 'february', 'march', 'april', 'may', 'june', 'july', 'august', 'september', 'october', 'november',
  'december',
];

function daysFromCivil(y, m, d) {
  y = m <= 2 ? y - 1 : y;
  const era = Math.floor((y >= 0 ? y : y - 399) / 400);
  const yoe = y - era * 400;
  const doy = Math.floor((153 * (m + (m > 2 ? -3 : 9)) + 2) / 5) + d - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return era * 146097 + doe - 719468;
}

/// "1:56 pm on 8 May, 2023" → milliseconds (UTC), as the native parser.
export function parseLocomoDate(s) {
  const lower = s.toLowerCase();
  const at = lower.indexOf(' on ');
  if (at < 0) return undefined;
  const [hm, ampm] = lower.slice(0, at).trim().split(' ');
  let [h, m] = hm.split(':').map((x) => Number.parseInt(x.trim(), 10));
  if (ampm?.trim() === 'pm' && h !== 12) h += 12;
  else if (ampm?.trim() === 'am' && h === 12) h = 0;
  const [day, month, year] = lower
    .slice(at + 4)
    .split(/[ ,]/)
    .filter(Boolean);
  const mo = MONTHS.findIndex((name) => name.startsWith(month)) + 1;
  if (mo === 0) return undefined;
  const days = daysFromCivil(Number(year), mo, Number(day));
  return ((days * 24 + h) * 60 + m) * 60_000;
}

export const namespaceOf = (sampleId) => `locomo-${sampleId.replace(/[^A-Za-z0-9-]/g, '_')}`;

/// Ingests every sample's turns.
export async function ingestSamples(mnemo, samples) {
  let turns = 0;
  for (const sample of samples) {
    const ns = namespaceOf(sample.sample_id);
    const conv = sample.conversation;
    for (let n = 1; Array.isArray(conv[`session_${n}`]); n++) {
      const date = parseLocomoDate(conv[`session_${n}_date_time`] ?? '') ?? 0;
      for (const [i, t] of conv[`session_${n}`].entries()) {
        const speaker = t.speaker ?? 'speaker';
        let content = `${speaker}: ${t.text ?? ''}`;
        if (typeof t.blip_caption === 'string') content += ` [shares ${t.blip_caption}]`;
        await mnemo.ingest({
          namespace: ns,
          sessionId: `session_${n}`,
          role: speaker,
          content,
          eventTime: date + i * 1000,
          attributes: JSON.stringify({ dia_id: t.dia_id ?? '' }),
        });
        turns += 1;
      }
    }
  }
  return turns;
}

/// Every question's ranked dia_ids and scores, as `mnemo-lab eval locomo --out`
/// writes them: `{ qid, ranked, scores }`.
export async function askSamples(mnemo, samples, k = 10) {
  const out = [];
  for (const sample of samples) {
    const ns = namespaceOf(sample.sample_id);
    for (const [qi, qa] of (sample.qa ?? []).entries()) {
      if (!(qa.category >= 1 && qa.category <= 4)) continue;
      const res = await mnemo.recall({ query: qa.question ?? '', namespace: ns, episodesOnly: true, limit: k, dry: true });
      const hits = res.hits.filter((h) => h.item.tag === 'episode');
      out.push({
        qid: `${sample.sample_id}#${qi}`,
        ranked: hits.map((h) => JSON.parse(h.item.val.attributes).dia_id),
        scores: hits.map((h) => h.score),
      });
    }
  }
  return out;
}
