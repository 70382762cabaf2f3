-- Pandoc filter for the notebooks' Markdown cells (docs/_ext/notebooks.py).
-- sphinx-gallery hands each reST text block to pandoc; reST that pandoc does
-- not know as Markdown (Sphinx roles, sphinx-design dropdowns, admonitions,
-- heading ids) would show as raw markup in Jupyter. This filter turns:
--   :doc:`target`          -> a link to that page on the hosted site
--   :obj:`~pkg.Name` etc.  -> `Name` (a link for hooks_tutorial names)
--   .. dropdown:: Title     -> <details><summary>Title</summary> ... </details>
--   .. note:: / .. tip::    -> a block quote starting with **Note**
--   .. rst-class:: name     -> nothing (a class for the site's HTML)
-- The links file (JSON from notebooks.py; its path is the links_file metadata):
-- site = page root URL with a trailing slash, api = the API page's URL, objects =
-- the documented names (each has its own page, generated/<name>.html, see
-- docs/api.rst), titles = {docname = page title}.

local site, api, titles, objects = "", "", {}, {}

local XREF = {
  obj = true, func = true, class = true, meth = true, attr = true,
  mod = true, exc = true, data = true, ["py:obj"] = true, ["py:func"] = true,
  ["py:class"] = true, ["py:meth"] = true, ["py:attr"] = true,
}
local LABELS = {
  note = "Note", tip = "Tip", hint = "Hint", warning = "Warning",
  important = "Important", caution = "Caution", seealso = "See also",
  attention = "Attention", danger = "Danger", error = "Error",
}

local function strip_title(text)
  -- "Title <target>" -> title, target
  local title, target = text:match("^(.-)%s*<([^>]+)>$")
  if title and title ~= "" then return title, target end
  return nil, text
end

local function doc_link(text)
  local title, target = strip_title(text)
  local name = target:gsub("^/", "")
  title = title or titles[name] or name
  return pandoc.Link({ pandoc.Str(title) }, site .. name .. ".html")
end

local function xref(text)
  local _, target = strip_title(text)
  local short = target:sub(1, 1) == "~"
  target = target:gsub("^[~!]", "")
  local shown = short and target:match("([^.]+)$") or target
  if target:match("^hooks_tutorial[.]") and api ~= "" then
    -- the page of the object or of the class a member belongs to
    local page = target
    while page ~= "" and not objects[page] do page = page:match("^(.*)[.][^.]*$") or "" end
    if page == "" then return pandoc.Link({ pandoc.Code(shown) }, api) end
    return pandoc.Link({ pandoc.Code(shown) }, site .. "generated/" .. page .. ".html#" .. target)
  end
  return pandoc.Code(shown)
end

function Code(el)
  local role = el.attributes["role"]
  if role == nil then
    el.attr = pandoc.Attr()
    return el
  end
  if role == "doc" then return doc_link(el.text) end
  if XREF[role] then return xref(el.text) end
  if role == "math" then return pandoc.Math("InlineMath", el.text) end
  if role == "download" or role == "ref" then
    local title, target = strip_title(el.text)
    return pandoc.Str(title or target)
  end
  return pandoc.Code(el.text)
end

function CodeBlock(el)
  local lang = el.classes[1]
  el.attr = pandoc.Attr("", lang and { lang } or {})
  return el
end

function Header(el)
  el.attr = pandoc.Attr()
  return el
end

function Span(el) return el.content end

function Div(el)
  local kind = el.classes[1]
  if kind == "title" then return el end -- an admonition's title: read below
  if kind == "index" then return {} end -- index entries are for the site's search only
  -- ".. rst-class:: solution" marks where a solution starts (docs/_ext/solutions.py folds
  -- it on the site); in a notebook the solution is plain cells
  if kind == "rst-class" then return {} end
  if kind == "dropdown" then
    local blocks = el.content
    local summary = "Details"
    if #blocks > 0 and blocks[1].t == "Para" then
      summary = pandoc.utils.stringify(blocks[1])
      blocks = { table.unpack(blocks, 2) }
    end
    local out = { pandoc.RawBlock("html", "<details><summary>" .. summary .. "</summary>") }
    for _, b in ipairs(blocks) do out[#out + 1] = b end
    out[#out + 1] = pandoc.RawBlock("html", "</details>")
    return out
  end
  if LABELS[kind] then
    local blocks = el.content
    if #blocks > 0 and blocks[1].t == "Div" and blocks[1].classes[1] == "title" then
      blocks = { table.unpack(blocks, 2) }
    end
    local label = pandoc.Para({ pandoc.Strong({ pandoc.Str(LABELS[kind]) }) })
    table.insert(blocks, 1, label)
    return pandoc.BlockQuote(blocks)
  end
  if kind == "admonition" and #el.content > 0 then
    local blocks = el.content
    local title = pandoc.utils.stringify(blocks[1])
    blocks[1] = pandoc.Para({ pandoc.Strong({ pandoc.Str(title) }) })
    return pandoc.BlockQuote(blocks)
  end
  return el.content
end

function Pandoc(doc)
  -- read here, not with --metadata-file (see pandoc_args in notebooks.py)
  local path = doc.meta.links_file and pandoc.utils.stringify(doc.meta.links_file)
  if path then
    local file = assert(io.open(path, "r"))
    local links = pandoc.json.decode(file:read("a"), false)
    file:close()
    site, api = links.site, links.api
    for _, name in ipairs(links.objects) do objects[name] = true end
    for name, title in pairs(links.titles) do
      -- plain text, as link text: "``lambda``: ..." -> "lambda: ..."
      titles[name] = pandoc.utils.stringify(pandoc.read(title, "markdown").blocks)
    end
  end
  doc.meta = pandoc.Meta({})
  return doc:walk({
    Code = Code, CodeBlock = CodeBlock, Header = Header, Span = Span, Div = Div,
  })
end

-- only Pandoc runs at the top level: the metadata is read before the walk
return { { Pandoc = Pandoc } }
