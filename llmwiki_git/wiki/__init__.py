"""The wiki model: pages, frontmatter, the wikilink scanner, slugs and link resolution."""
