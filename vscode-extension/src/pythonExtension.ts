import * as vscode from 'vscode';
import { PythonExtension } from '@vscode/python-extension';

export const PYTHON_EXTENSION_ID = 'ms-python.python';

/** Whether the Python extension is installed (it is optional: no extensionDependencies). */
export function pythonExtensionInstalled(): boolean {
  return vscode.extensions.getExtension(PYTHON_EXTENSION_ID) !== undefined;
}

/** The Python extension's active interpreter for `resource`, or undefined. */
export async function activeInterpreter(resource: vscode.Uri | undefined): Promise<string | undefined> {
  const api = await PythonExtension.api();
  const envPath = api.environments.getActiveEnvironmentPath(resource);
  const resolved = await api.environments.resolveEnvironment(envPath);
  return resolved?.executable.uri?.fsPath ?? (envPath.path || undefined);
}

/** Subscribes to interpreter changes in the Python extension (no-op when it is not installed). */
export async function onDidChangeInterpreter(listener: () => void): Promise<vscode.Disposable | undefined> {
  if (!pythonExtensionInstalled()) {
    return undefined;
  }
  try {
    const api = await PythonExtension.api();
    return api.environments.onDidChangeActiveEnvironmentPath(() => listener());
  } catch {
    return undefined;
  }
}
