/*
 * hooks-tutorial's search ranking. conf.py names this file in ``html_search_scorer``;
 * Sphinx copies it into ``_static/language_data.js``, which the search page loads after
 * ``searchtools.js``. Sphinx still finds the results (the pages that hold every word of
 * the query); this file orders them (``Scorer.score``) and cuts a Chinese query into
 * words (``splitQuery``). e2e/test_search_ranking.py runs the queries it is for.
 *
 * Why: Sphinx gives a result the score of its best single match (an index entry 100, a
 * title 15, a word of the text 5) and matches index entries and titles against the
 * whole query only. A page whose title holds both words of "反向钩子 梯度" then ties with
 * every page that has one of them in some title, and ties are listed alphabetically.
 * Here a page's score adds up what each part of the query finds on it:
 *
 * - The parts: each word the reader typed ("Grad-CAM" is one word; a Chinese run is cut
 *   into the index's words, see below), and each run of two or more consecutive words,
 *   as typed (a phrase: "does not require grad").
 * - A part scores on a page what Sphinx would give it as the whole query: an index entry
 *   that holds it and is at most twice as long, 100 times the share of the entry it
 *   covers; the same for a title, 15; an API name, 100. A phrase found in a longer entry
 *   or title (the words of an error message that a heading quotes) counts as half of it.
 *   A word of the page's own title scores 50: the title names what the page is about,
 *   as its index entries do. Otherwise: the part's words in the page's titles 15, in its
 *   text 5 (as part of a longer word 7 and 2), like Sphinx.
 * - Each part is weighted by how rare it is, log(1 + pages / pages it scores on) (inverse
 *   document frequency): "反向钩子" is on fewer pages than "梯度" and says more.
 * - API pages (api, generated/*) count half: a name's API page is found by the name
 *   itself (100, halved), and the page that teaches a name (its index entry) comes
 *   before the API pages that only take it as a parameter.
 *
 * Sphinx's own score of a result (divided by 100) only breaks ties, so each page's
 * results stay together, in Sphinx's order.
 */

var HooksSearch = (() => {
  const HAN = /\p{Script=Han}/u;
  const RUNS = /\p{Script=Han}+|[^\p{Script=Han}]+/gu;
  const CORE = /[\p{Letter}\p{Number}_](?:.*[\p{Letter}\p{Number}_])?/u;
  // Sphinx's own splitQuery (searchtools.js): on what is not a letter, number, _ or emoji
  const sphinxSplit = (query) =>
    query.split(/[^\p{Letter}\p{Number}_\p{Emoji_Presentation}]+/gu).filter((w) => w);

  const index = () => (typeof Search !== "undefined" ? Search._index : null);

  // -- Chinese words -------------------------------------------------------------------
  // The zh index holds the words jieba cut the pages into (with the user dictionary of
  // conf.py), and the pages' index entries name terms ("注意力头"). A reader types no
  // spaces ("反向钩子梯度"): the query is cut into these words, longest first (forward
  // maximum matching); characters that start no word of the index (的, 怎么, ...) are
  // dropped, like stop words.
  let vocabulary = null;
  let vocabularyOf = null;
  const words = () => {
    const ix = index();
    if (ix !== vocabularyOf) {
      vocabularyOf = ix;
      vocabulary = { words: new Set(), longest: 1 };
      if (ix)
        for (const term of [
          ...Object.keys(ix.terms),
          ...Object.keys(ix.titleterms),
          ...Object.keys(ix.indexentries).filter((entry) => /^\p{Script=Han}+$/u.test(entry)),
        ])
          if (HAN.test(term)) {
            vocabulary.words.add(term);
            vocabulary.longest = Math.max(vocabulary.longest, term.length);
          }
    }
    return vocabulary;
  };

  const cutHan = (run) => {
    const { words: known, longest } = words();
    if (known.size === 0 || known.has(run)) return [run];
    const found = [];
    for (let i = 0; i < run.length; ) {
      let size = Math.min(longest, run.length - i);
      while (size > 1 && !known.has(run.substr(i, size))) size -= 1;
      if (size > 1) found.push(run.substr(i, size));
      i += size;
    }
    return found.length ? found : [run];
  };

  // a word of the query as the index writes words: Han runs cut, the rest kept
  const cut = (word) =>
    (word.match(RUNS) || []).flatMap((run) => (HAN.test(run) ? cutHan(run) : [run]));

  const splitQuery = (query) => sphinxSplit(query).flatMap(cut);

  // -- the parts of a query --------------------------------------------------------------
  const stems = (text) => {
    const stemmer = new Stemmer();
    return splitQuery(text)
      .map((w) => w.toLowerCase())
      .filter((w) => !stopwords.has(w) && !/^\d+$/.test(w))
      .map((w) => stemmer.stemWord(w));
  };

  // The words the reader typed (a Chinese run cut as above), each with where it stands in
  // the query, then every run of two or more consecutive words as it was typed (a phrase)
  const partsOf = (query) => {
    const text = query.toLowerCase().trim().replace(/\s+/g, " ");
    const words = [];
    for (const chunk of text.matchAll(/\S+/g))
      for (const run of chunk[0].matchAll(RUNS)) {
        const at = chunk.index + run.index;
        if (HAN.test(run[0])) {
          let from = 0;
          for (const word of cutHan(run[0])) {
            const i = run[0].indexOf(word, from);
            words.push({ text: word, start: at + i, end: at + i + word.length });
            from = i + word.length;
          }
        } else {
          const core = run[0].match(CORE); // "grad-cam" without the quotes around it
          if (core)
            words.push({
              text: core[0],
              start: at + core.index,
              end: at + core.index + core[0].length,
            });
        }
      }
    const parts = words
      .map((word) => ({ ...word, terms: stems(word.text), phrase: false }))
      .filter((part) => part.terms.length); // not a stop word or a number alone
    const phrases = [];
    for (let i = 0; i < parts.length; i++)
      for (let j = i + 1; j < parts.length; j++)
        phrases.push({ text: text.slice(parts[i].start, parts[j].end), terms: [], phrase: true });
    return [...parts, ...phrases];
  };

  // -- what Sphinx would give one part of the query, on each page ---------------------------
  const share = (part, name) => {
    const ratio = part.text.length / name.length;
    if (ratio >= 0.5) return ratio; // Sphinx's rule for the whole query
    return part.phrase ? 0.5 : 0;
  };

  const matches = (ix, part) => {
    const best = new Map(); // page -> score
    const give = (file, score) => {
      if (score > (best.get(file) || 0)) best.set(file, score);
    };
    for (const [entry, found] of Object.entries(ix.indexentries)) {
      const name = entry.toLowerCase();
      if (!name.includes(part.text)) continue;
      const s = share(part, name);
      if (s) for (const [file, , isMain] of found) if (isMain) give(file, 100 * s);
    }
    for (const [title, found] of Object.entries(ix.alltitles)) {
      const name = title.toLowerCase();
      if (!name.includes(part.text)) continue;
      const s = share(part, name);
      if (s)
        for (const [file] of found)
          give(file, Scorer.title * s + (ix.titles[file] === title ? 1 : 0));
    }
    if (part.phrase) return best;
    for (const [prefix, objects] of Object.entries(ix.objects))
      for (const [file, , , , name] of objects) {
        const full = (prefix ? `${prefix}.${name}` : name).toLowerCase();
        const last = full.split(".").slice(-1)[0];
        if (full === part.text || last === part.text) give(file, 100);
        else if (last.includes(part.text)) give(file, 100 * share(part, last));
      }
    // the page's own title names what it is about, as its index entries do: half an entry
    ix.titles.forEach((title, file) => {
      const own = titleWords(ix, file);
      const inTitle = (term) => (HAN.test(term) ? own.text.includes(term) : own.stems.has(term));
      if (part.terms.every(inTitle)) give(file, 50);
    });
    // every word of the part in the page: in a title 15, in the text 5 (partly: 7, 2)
    const wordScores = part.terms.map((term) => {
      const scores = new Map();
      const add = (files, score) => {
        for (const file of typeof files === "number" ? [files] : files || [])
          if (score > (scores.get(file) || 0)) scores.set(file, score);
      };
      for (const [map, exact, partial] of [
        [ix.terms, Scorer.term, Scorer.partialTerm],
        [ix.titleterms, Scorer.title, Scorer.partialTitle],
      ]) {
        if (Object.hasOwn(map, term)) add(map[term], exact);
        else if (term.length > 2)
          for (const key of Object.keys(map)) if (key.includes(term)) add(map[key], partial);
      }
      return scores;
    });
    for (const [file, score] of wordScores[0] || [])
      give(file, Math.min(score, ...wordScores.slice(1).map((s) => s.get(file) || 0)));
    return best;
  };

  let titleCache = { ix: null, pages: [] };
  const titleWords = (ix, file) => {
    if (titleCache.ix !== ix) titleCache = { ix, pages: [] };
    if (!titleCache.pages[file]) {
      const text = ix.titles[file].toLowerCase();
      titleCache.pages[file] = { text, stems: new Set(stems(text)) };
    }
    return titleCache.pages[file];
  };

  const isApiPage = (docName) => docName === "api" || docName.startsWith("generated/");

  // page name -> score, for one query on one index
  let memo = { query: null, ix: null, scores: null };
  const pageScores = (query) => {
    const ix = index();
    if (memo.query === query && memo.ix === ix) return memo.scores;
    const scores = new Map();
    const pages = ix.docnames.length;
    for (const part of partsOf(query)) {
      const best = matches(ix, part);
      if (best.size === 0) continue;
      const weight = Math.log(1 + pages / best.size);
      for (const [file, score] of best) {
        const docName = ix.docnames[file];
        const page = score * weight * (isApiPage(docName) ? 0.5 : 1);
        scores.set(docName, (scores.get(docName) || 0) + page);
      }
    }
    memo = { query, ix, scores };
    return scores;
  };

  // the query of the search page (searchtools.js reads the same parameter)
  const currentQuery = () => new URLSearchParams(window.location.search).get("q") || "";

  const score = (result) => {
    const [docName, , , , sphinxScore] = result;
    if (!index()) return sphinxScore;
    const page = pageScores(currentQuery()).get(docName) || 0;
    return Math.round((page + sphinxScore / 100) * 1000) / 1000;
  };

  return { score, splitQuery, partsOf, pageScores };
})();

// Sphinx's defaults (searchtools.js), which its own matching uses; score() orders
var Scorer = {
  objNameMatch: 11,
  objPartialMatch: 6,
  objPrio: { 0: 15, 1: 5, 2: -5 },
  objPrioDefault: 0,
  title: 15,
  partialTitle: 7,
  term: 5,
  partialTerm: 2,
  score: (result) => HooksSearch.score(result),
};

var splitQuery = HooksSearch.splitQuery;
