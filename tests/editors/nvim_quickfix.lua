-- Drives a real Neovim (headless) against `gradlint lsp`: open a file, wait for the
-- diagnostics, request and apply the quick fix, and wait for the diagnostic to clear.
-- The language server is started by the configuration Neovim was started with (`-u`: the
-- README's snippet), when the file is opened. Arguments come from the environment:
-- GRADLINT_FILE, GRADLINT_RESULT, GRADLINT_DIAG_WAIT.
local file = os.getenv('GRADLINT_FILE')
local result_path = os.getenv('GRADLINT_RESULT')
local wait_ms = tonumber(os.getenv('GRADLINT_DIAG_WAIT') or '20000')
local result = { steps = {} }

local function finish(ok)
  result.ok = ok
  local handle = io.open(result_path, 'w')
  handle:write(vim.fn.json_encode(result))
  handle:close()
  if ok then vim.cmd('qall!') else vim.cmd('cquit! 1') end
end

local function step(name) table.insert(result.steps, name) end

local function clients(bufnr)
  local found = {}
  if vim.lsp.get_clients then  -- 0.10+
    for _, c in ipairs(vim.lsp.get_clients({ bufnr = bufnr })) do table.insert(found, c) end
  else
    for _, c in pairs(vim.lsp.buf_get_clients(bufnr)) do table.insert(found, c) end
  end
  return found
end

vim.cmd('edit ' .. vim.fn.fnameescape(file))
local bufnr = vim.api.nvim_get_current_buf()
if not vim.wait(20000, function() return #clients(bufnr) > 0 end, 50) then
  result.error = 'the configuration attached no language server'
  return finish(false)
end
local client = clients(bufnr)[1]
local client_id = client.id
result.client = client.name
step('started')

local got = vim.wait(wait_ms, function() return #vim.diagnostic.get(bufnr) > 0 end, 50)
if not got then
  result.error = 'no diagnostics'
  return finish(false)
end
local diagnostics = vim.diagnostic.get(bufnr)
result.before = {}
for _, d in ipairs(diagnostics) do
  table.insert(result.before, { code = d.code, message = d.message, lnum = d.lnum, col = d.col,
                                end_lnum = d.end_lnum, end_col = d.end_col, source = d.source })
end
step('diagnostics')

local d = diagnostics[1]
local lsp_diagnostic = {
  range = { start = { line = d.lnum, character = d.col },
            ['end'] = { line = d.end_lnum, character = d.end_col } },
  severity = d.severity, message = d.message, source = d.source, code = d.code,
  data = d.user_data and d.user_data.lsp and d.user_data.lsp.data or nil,
}
local params = {
  textDocument = { uri = vim.uri_from_bufnr(bufnr) },
  range = lsp_diagnostic.range,
  context = { diagnostics = { lsp_diagnostic } },
}
local responses = vim.lsp.buf_request_sync(bufnr, 'textDocument/codeAction', params, 10000)
local actions = {}
for _, response in pairs(responses or {}) do
  for _, action in ipairs(response.result or {}) do table.insert(actions, action) end
end
result.actions = {}
for _, action in ipairs(actions) do table.insert(result.actions, action.title) end
if #actions == 0 or not actions[1].edit then
  result.error = 'no quick fix'
  return finish(false)
end
step('code actions')

vim.lsp.util.apply_workspace_edit(actions[1].edit, 'utf-16')
result.fixed_line = vim.api.nvim_buf_get_lines(bufnr, d.lnum - 1, d.lnum, false)[1]
step('applied')

local cleared = vim.wait(20000, function() return #vim.diagnostic.get(bufnr) == 0 end, 50)
if not cleared then
  result.error = 'the diagnostic did not clear'
  return finish(false)
end
step('cleared')
vim.lsp.stop_client(client_id)
finish(true)
