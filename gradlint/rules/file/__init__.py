"""Rules about a file as a whole: it parses, its `# gradlint:` comments are valid and used."""
