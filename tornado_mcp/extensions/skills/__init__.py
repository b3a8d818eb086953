"""Agent skills over MCP: the ``io.modelcontextprotocol/skills`` extension (SEP-2640).

    server.skill("skills/pdf-processing")      # one skill directory (holding SKILL.md)
    server.skills_from("skills/")               # every skill directory below one
    server.add_skill("daily", SKILL_MD, files={"data/today.csv": make_csv})  # generated

Each file of a skill is a ``skill://<skill-path>/<file-path>`` resource (listed by
``resources/list``, read by ``resources/read``, ``SKILL.md`` as ``text/markdown`` with the
frontmatter's name and description); ``skills/list`` (paginated like the base lists) and
``skills/get`` answer with each skill's entry: its frontmatter verbatim and the complete
manifest of its files with ``sha256:`` digests and sizes, or ``"dynamic"`` for a skill
with a generated file.  ``resources/directory/read`` lists a skill directory's direct
children (``inode/directory`` for subdirectories).  The extension and the methods appear
with the first skill.

Bounds: at most ``max_skills`` skills (:data:`MAX_SKILLS`), each of at most ``max_files``
files (:data:`MAX_SKILL_FILES`, 512) and ``max_bytes`` bytes (:data:`MAX_SKILL_BYTES`,
16 MiB); a generated file's read is held to the skill's byte bound too, and a file on
disk to what that bound leaves it beside the skill's other files; a legacy session
subscribes to at most :data:`MAX_SKILL_SUBSCRIPTIONS` skill URIs.  Paths stay inside the
skill directory (see :mod:`.files`).

A skill on disk that changes is found by :meth:`SkillCatalog.refresh` (or
:meth:`SkillCatalog.watch`, which polls it), and by any read that finds a file's bytes
no longer match the manifest: the entry is rebuilt, and ``notifications/resources/updated``
goes to the listen streams and legacy sessions subscribed to a changed file (the
``SKILL.md`` URI whenever the skill changed), ``notifications/resources/list_changed`` when
files came or went.  A skill that breaks a rule after a change is withdrawn (and logged).
"""

from .catalog import (
    DIRECTORY_MIME,
    MAX_SKILL_BYTES,
    MAX_SKILL_FILES,
    MAX_SKILL_SUBSCRIPTIONS,
    MAX_SKILLS,
    SKILLS_EXTENSION,
    Skill,
    SkillCatalog,
    SkillError,
    SkillFile,
)

__all__ = ["DIRECTORY_MIME", "MAX_SKILLS", "MAX_SKILL_BYTES", "MAX_SKILL_FILES",
           "MAX_SKILL_SUBSCRIPTIONS", "SKILLS_EXTENSION", "Skill", "SkillCatalog",
           "SkillError", "SkillFile"]
