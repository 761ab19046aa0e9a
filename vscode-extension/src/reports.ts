import * as vscode from 'vscode';
import { LastReport } from './protocol';

/** Read-only `gradlint-report:` documents holding the markdown of gradcheck reports. */
export class ReportDocuments implements vscode.TextDocumentContentProvider, vscode.Disposable {
  static readonly scheme = 'gradlint-report';
  private readonly contents = new Map<string, string>();
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;
  private counter = 0;

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.contents.get(uri.toString()) ?? '';
  }

  static fileName(title: string): string {
    const safe = title.replace(/[\\/:*?"<>|#%\s]+/g, ' ').trim().slice(0, 80) || 'gradcheck report';
    return `${safe}.md`;
  }

  /** Opens the report in the Markdown preview beside the code (falls back to the Markdown source). */
  async show(report: LastReport): Promise<vscode.Uri> {
    this.counter += 1;
    const uri = vscode.Uri.from({
      scheme: ReportDocuments.scheme,
      path: `/${ReportDocuments.fileName(report.title)}`,
      query: String(this.counter),
    });
    // Keep only the last few reports.
    if (this.contents.size >= 10) {
      const oldest = this.contents.keys().next().value;
      if (oldest !== undefined) {
        this.contents.delete(oldest);
      }
    }
    this.contents.set(uri.toString(), report.markdown);
    this.changed.fire(uri);
    try {
      await vscode.commands.executeCommand('markdown.showPreviewToSide', uri);
    } catch {
      const doc = await vscode.workspace.openTextDocument(uri);
      await vscode.languages.setTextDocumentLanguage(doc, 'markdown');
      await vscode.window.showTextDocument(doc, { preview: true });
    }
    return uri;
  }

  dispose(): void {
    this.changed.dispose();
    this.contents.clear();
  }
}
