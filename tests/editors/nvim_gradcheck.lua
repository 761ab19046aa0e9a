-- Drives a real Neovim (headless) to run gradcheck through `gradlint lsp`, as the README says
-- a user does: on a Function, ask for code actions, pick "Run gradcheck on ...", and execute
-- its command. The language server is started by the configuration Neovim was started with
-- (`-u`: the README's snippet). Writes what happened to GRADLINT_RESULT: the actions offered,
-- the command's answer (or error), the messages the server showed, and the diagnostics after
-- the run. Arguments come from the environment: GRADLINT_FILE, GRADLINT_RESULT, GRADLINT_LINE
-- (0-based line of the Function), GRADLINT_RUN_WAIT (ms the run may take).
local file = os.getenv('GRADLINT_FILE')
local result_path = os.getenv('GRADLINT_RESULT')
local line = tonumber(os.getenv('GRADLINT_LINE') or '0')
local run_wait = tonumber(os.getenv('GRADLINT_RUN_WAIT') or '300000')
local result = { steps = {}, messages = {} }

local function finish(ok)
  result.ok = ok
  local handle = io.open(result_path, 'w')
  handle:write(vim.fn.json_encode(result))
  handle:close()
  if ok then vim.cmd('qall!') else vim.cmd('cquit! 1') end
end

local function step(name) table.insert(result.steps, name) end

-- what the server shows the user (window/showMessage): kept, as a user would read it
vim.lsp.handlers['window/showMessage'] = function(_, params)
  table.insert(result.messages, params.message)
end

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
step('started')

local params = {
  textDocument = { uri = vim.uri_from_bufnr(bufnr) },
  range = { start = { line = line, character = 0 }, ['end'] = { line = line, character = 0 } },
  context = { diagnostics = {} },
}
local responses = vim.lsp.buf_request_sync(bufnr, 'textDocument/codeAction', params, 20000)
local run
result.actions = {}
for _, response in pairs(responses or {}) do
  for _, action in ipairs(response.result or {}) do
    table.insert(result.actions, action.title)
    if run == nil and action.title:find('^Run gradcheck') then run = action end
  end
end
if run == nil then
  result.error = 'no "Run gradcheck" action'
  return finish(false)
end
step('code action')

-- the action's command, as vim.lsp.buf.code_action() would execute it
local command = { command = run.command.command, arguments = run.command.arguments }
local answer, err = client.request_sync('workspace/executeCommand', command, run_wait, bufnr)
if answer == nil then
  result.error = 'no answer: ' .. tostring(err)
  return finish(false)
end
if answer.err then
  result.refused = answer.err.message
  step('refused')
  return finish(true)
end
result.answer = answer.result
step('ran')

-- a failure becomes a diagnostic on the line to fix
vim.wait(20000, function() return #vim.diagnostic.get(bufnr) > 0 end, 50)
result.diagnostics = {}
for _, d in ipairs(vim.diagnostic.get(bufnr)) do
  table.insert(result.diagnostics, { code = d.code, message = d.message, lnum = d.lnum })
end
vim.lsp.stop_client(client.id)
finish(true)
