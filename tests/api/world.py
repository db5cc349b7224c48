"""One small study built through the real services, shared by the API and security tests.

The cast of tests/conftest.py (owner olivia, lead lena, annotators alice and bob, outsider oscar) in
study `ddp` with a codebook, four items, round 1 assigned to alice and bob, and labels:

* item 1: alice and bob both submitted, and disagree (an open disagreement);
* item 2: only alice submitted, with her own proposed code (bob's assignment is open: alice's labels must
  stay hidden from bob);
* item 3: both open; item 4: in no round.

Alice's memo and her proposed code carry markers (`ALICE_MEMO`, `ALICE_CODE_NAME`, `ALICE_CODE_KEY`) that no
response may ever show bob.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from apps.accounts.models import ApiToken, Study, User
from apps.annotation import services as labelling
from apps.annotation.models import Assignment, Round
from apps.corpus.models import Item, SavedView
from apps.taxonomy.codebook_spec import codebook_from_data
from apps.taxonomy.loading import load_codebook
from tests.factories import ItemFactory, StudyFactory

ALICE_MEMO = "ALICE-PRIVATE-MEMO-7f3a"
BOB_MEMO = "BOB-PRIVATE-MEMO-91c2"

CODEBOOK: dict[str, Any] = {
    "name": "DDP faults",
    "dimensions": [
        {
            "key": "type",
            "name": "Issue type",
            "multiple": False,
            "categories": [
                {"key": "fault", "name": "Fault", "definition": "Something is broken."},
                {"key": "howto", "name": "How-to", "definition": "A question about usage."},
            ],
        },
        {
            "key": "symptom",
            "name": "Symptom",
            "multiple": False,
            "applies_when": {"type": "fault"},
            "categories": [
                {"key": "crash", "name": "Crash", "children": [{"key": "segfault", "name": "Segfault"}]},
                {"key": "hang", "name": "Hang", "definition": "Nothing happens, forever."},
            ],
        },
        {
            "key": "fix",
            "name": "Fix",
            "multiple": True,
            "applies_when": {"type": "fault"},
            "categories": [{"key": "config", "name": "Config"}, {"key": "code", "name": "Code"}],
        },
    ],
}

ALICE_LABELS = {
    "findings": [{"values": {"type": ["fault"], "symptom": ["hang"], "fix": ["config"]}}],
    "memo": ALICE_MEMO,
}
# Alice labels item 2 with her own proposed code: only she (and the leads) may ever see its name.
ALICE_CODE_NAME = "Zombie rank 5e1d"
ALICE_CODE_KEY = "zombie-rank-5e1d"
ALICE_PRIVATE_LABELS = {
    "findings": [{"values": {"type": ["fault"], "symptom": [ALICE_CODE_KEY], "fix": ["code"]}}],
    "memo": ALICE_MEMO,
}
BOB_LABELS = {
    "findings": [{"values": {"type": ["howto"]}}],
    "memo": BOB_MEMO,
}


@dataclass
class World:
    study: Study
    owner: User
    lead: User
    alice: User
    bob: User
    outsider: User
    items: list[Item]
    round: Round
    assignments: dict[tuple[str, int], Assignment] = field(default_factory=dict)
    other_study: Study | None = None
    extras: dict[str, Any] = field(default_factory=dict)

    def assignment(self, username: str, item_index: int) -> Assignment:
        return self.assignments[(username, item_index)]

    def token(self, user: User) -> str:
        _, raw = ApiToken.issue(user, "tests")
        return raw


def build_world(study: Study, owner: User, lead: User, alice: User, bob: User, outsider: User) -> World:
    load_codebook(study, codebook_from_data(CODEBOOK), actor=owner)
    items = [
        ItemFactory(
            study=study,
            url=f"https://github.com/example/ddp/issues/{n}",
            title=f"Training hangs {n}",
            body=f"NCCL timeout on rank {n}",
            body_format="markdown",
        )
        for n in range(1, 5)
    ]
    round_ = Round.objects.create(study=study, number=1, name="Round 1", method="manual")
    for position, item in enumerate(items[:3]):
        round_.round_items.create(item=item, position=position)
    labelling.assign_round(study, 1, ["alice", "bob"], overlap=2, actor=lead)
    world = World(study, owner, lead, alice, bob, outsider, items, round_)
    for assignment in Assignment.objects.filter(study=study).select_related("annotator"):
        index = [i.pk for i in items].index(assignment.item_id)
        world.assignments[(assignment.annotator.username, index)] = assignment
    version = labelling.load_codebook(study).version
    labelling.submit_annotation(world.assignment("alice", 0), ALICE_LABELS, alice, codebook_version=version)
    labelling.submit_annotation(world.assignment("bob", 0), BOB_LABELS, bob, codebook_version=version)
    from apps.taxonomy.models import Dimension
    from apps.taxonomy.services import propose_category

    symptom = Dimension.objects.get(codebook__study=study, key="symptom")
    proposed = propose_category(symptom, ALICE_CODE_NAME, None, "only alice knows", alice).category
    assert proposed.key == ALICE_CODE_KEY, proposed.key
    labelling.submit_annotation(
        world.assignment("alice", 1), ALICE_PRIVATE_LABELS, alice, codebook_version=version
    )
    world.other_study = StudyFactory(slug="elsewhere", name="Someone else's study")
    return world


def add_jobs(world: World) -> World:
    """One of each background job (one export finished, its file under settings.EXPORT_ROOT) and a
    proposal, so every URL with an id has something to point at."""
    from apps.agreement.services import request_dashboard
    from apps.corpus.models import ItemLink
    from apps.corpus.params import FileParams
    from apps.corpus.services import create_import_job
    from apps.export.services import create_export, export_in_foreground, parse_options
    from apps.taxonomy.models import Dimension
    from apps.taxonomy.services import propose_category

    study = world.study
    world.extras["import_job"] = create_import_job(
        study, FileParams(format="csv", filename="items.csv"), user=world.lead
    )
    world.extras["snapshot"] = request_dashboard(study, None, actor=world.lead)
    world.extras["export_job"] = create_export(study, parse_options(study, format="csv"), user=world.lead)
    world.extras["done_export"] = export_in_foreground(
        study, parse_options(study, format="csv"), user=world.lead
    )
    symptom = Dimension.objects.get(codebook__study=study, key="symptom")
    world.extras["proposal"] = propose_category(symptom, "Deadlock", None, "seen twice", world.alice).category
    world.extras["alice_token"] = ApiToken.issue(world.alice, "laptop")[0]
    from apps.accounts.invitations import create_invitation

    issued = create_invitation(study, role="annotator", actor=None, max_uses=None)  # a link for anyone
    world.extras["invitation"] = issued.invitation
    world.extras["invitation_token"] = issued.token
    world.extras["saved_view"] = SavedView.objects.create(
        user=world.alice, study=study, name="mine", query="q=x"
    )
    world.extras["item_link"] = ItemLink.objects.create(
        item=world.items[0], kind="commit", url="https://github.com/a/b/commit/abc1234", provenance="manual"
    )
    from apps.annotation.models import Comment

    # alice's comment on item 1's thread (round 1 is blind: written here, as the browser would refuse it)
    world.extras["comment"] = Comment.objects.create(
        round=world.round, item=world.items[0], author=world.alice, body="hmm", body_html="<p>hmm</p>"
    )
    from apps.raters.runs import create_model_run
    from apps.raters.services import RaterSettings, add_model_rater

    # a model rater whose server is never asked (its run is recorded, never sent)
    settings = RaterSettings(kind="openai", base_url="http://127.0.0.1:9/v1", model="never-asked")
    world.extras["model_rater"] = add_model_rater(study, "llm", settings, actor=world.lead)
    world.extras["model_run"] = create_model_run(
        study, world.extras["model_rater"], round_number=1, actor=world.lead
    )
    return world


def isolated_world(settings: Any, tmp_path: Any, *people: Any) -> World:
    """`build_world` with exports and uploads under the test's own temporary folder."""
    settings.EXPORT_ROOT = tmp_path / "exports"
    settings.UPLOAD_ROOT = tmp_path / "uploads"
    return build_world(*people)
