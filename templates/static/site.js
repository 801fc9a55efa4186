// Progressive enhancement only: every page reads fully without this script.
