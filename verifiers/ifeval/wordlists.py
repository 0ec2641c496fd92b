"""Closed word lists that IFBench's checkers count against, kept in-house (no NLTK data).

``STOP_WORDS`` is NLTK's English stop-word list, the one IFBench's ``ratio:stop_words``
loads. IFBench counts stop words among ``\\w+`` tokens, which never contain an apostrophe,
so the list's contracted entries ("don't", "she's"; the 2024 revision of the list added
more of them) can never match and are left out: every version of the list gives the same
counts. The other lists are the fixed vocabularies IFBench's checkers spell out.
"""

from __future__ import annotations

STOP_WORDS = frozenset(
    """
    i me my myself we our ours ourselves you your yours yourself yourselves he him his
    himself she her hers herself it its itself they them their theirs themselves what which
    who whom this that these those am is are was were be been being have has had having do
    does did doing a an the and but if or because as until while of at by for with about
    against between into through during before after above below to from up down in out on
    off over under again further then once here there when where why how all any both each
    few more most other some such no nor not only own same so than too very s t can will
    just don should now d ll m o re ve y ain aren couldn didn doesn hadn hasn haven isn ma
    mightn mustn needn shan shouldn wasn weren won wouldn
    """.split()
)

COORDINATING_CONJUNCTIONS = frozenset("and but for nor or so yet".split())

# The 50 names ``count:person_names`` lists in its instruction; only these count.
PERSON_NAMES = tuple(
    """
    Emma Liam Sophia Jackson Olivia Noah Ava Lucas Isabella Mason Mia Ethan Charlotte
    Alexander Amelia Benjamin Harper Leo Zoe Daniel Chloe Samuel Lily Matthew Grace Owen
    Abigail Gabriel Ella Jacob Scarlett Nathan Victoria Elijah Layla Nicholas Audrey David
    Hannah Christopher Penelope Thomas Nora Andrew Aria Joseph Claire Ryan Stella Jonathan
    """.split()
)

PRONOUNS = frozenset(
    """
    i me we us you he him she her it they them my mine our ours your yours his hers its
    their theirs myself ourselves yourself yourselves himself herself itself themselves
    this that these those who whom whose which what whoever whomever whatever whichever
    anybody anyone anything everybody everyone everything nobody nothing somebody someone
    something each either neither both all some any none
    """.split()
)

# European capitals north of 45 degrees latitude, northernmost first: the one answer
# ``custom:european_capitals_sort`` accepts.
EUROPEAN_CAPITALS_BY_LATITUDE = tuple(
    """
    Reykjavik Helsinki Oslo Tallinn Stockholm Riga Moscow Copenhagen Vilnius Minsk Dublin
    Berlin Amsterdam Warsaw London Brussels Prague Luxembourg Paris Vienna Bratislava
    Budapest Vaduz Chisinau Bern Ljubljana Zagreb
    """.split()
)
