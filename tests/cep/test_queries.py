"""Hand-checked Query 1 and Query 2 cases (each also checked against the oracle)."""

from __future__ import annotations

import pytest
from cep_helpers import at, events_of, run, write_debs
from reference import reference_q1, reference_q2


def q1(files, **options):
    lines = run("q1", files, **options)
    assert lines == list(reference_q1(events_of("q1", files)))
    return lines


def q2(files, k=2, d=3600, community="component", **options):
    lines = run("q2", files, k=k, d=d, community=community, **options)
    assert lines == list(reference_q2(events_of("q2", files), k, d, community))
    return lines


def test_graphcep_worked_example(tmp_path):
    # seed 002, Fig. 3: post 0 at day 1 02h, post 1 at day 1 09h, a comment on post 0 at
    # day 2 15h -> both decayed once, post 0 gained 10: scores 19 and 9
    files = write_debs(
        tmp_path,
        posts=[f"{at(0, 2)}|0|10|p0|Ann Lee", f"{at(0, 9)}|1|11|p1|Bo Li"],
        comments=[f"{at(1, 15)}|5|12|nice|Cy Wu||0"],
    )
    assert q1(files, instances=2) == [
        f"{at(0, 2)},0,Ann Lee,10,0,-,-,-,-,-,-,-,-",
        f"{at(0, 9)},1,Bo Li,10,0,0,Ann Lee,10,0,-,-,-,-",  # equal scores: newer post first
        f"{at(1, 15)},0,Ann Lee,19,1,1,Bo Li,9,0,-,-,-,-",
    ]


def test_reply_chains_commenters_and_no_line_for_a_score_change(tmp_path):
    files = write_debs(
        tmp_path,
        posts=[f"{at(0)}|1|10|p1|Ann", f"{at(0, 1)}|2|11|p2|Bo"],
        comments=[
            f"{at(0, 2)}|3|10|own|Ann||1",  # the author: no commenter
            f"{at(0, 3)}|4|12|reply|Cy|3|",  # a reply to a reply counts for post 1
            f"{at(0, 4)}|5|12|again|Cy|4|",  # same commenter
            f"{at(0, 5)}|6|13|other|Di||2",  # post 2: 20 < 40, order unchanged: no line
            f"{at(0, 6)}|7|13|lost|Di|99|",  # a reply to an unknown comment: ignored
        ],
    )
    assert q1(files) == [
        f"{at(0)},1,Ann,10,0,-,-,-,-,-,-,-,-",
        f"{at(0, 1)},2,Bo,10,0,1,Ann,10,0,-,-,-,-",
        f"{at(0, 2)},1,Ann,20,0,2,Bo,10,0,-,-,-,-",
    ]


def test_death_shows_at_the_next_event_and_later_comments_are_ignored(tmp_path):
    files = write_debs(
        tmp_path,
        posts=[f"{at(0)}|1|10|p1|Ann", f"{at(0, 1)}|2|11|p2|Bo", f"{at(12)}|3|12|p3|Cy"],
        comments=[f"{at(10, 0.5)}|4|13|late|Di||1"],  # post 1 died at day 10 exactly
    )
    assert q1(files) == [
        f"{at(0)},1,Ann,10,0,-,-,-,-,-,-,-,-",
        f"{at(0, 1)},2,Bo,10,0,1,Ann,10,0,-,-,-,-",
        f"{at(10, 0.5)},2,Bo,1,0,-,-,-,-,-,-,-,-",  # post 1's death, written here
        f"{at(12)},3,Cy,10,0,-,-,-,-,-,-,-,-",  # post 2 died at day 10 01h
    ]


def test_equal_scores_and_times_order_by_last_comment_then_id(tmp_path):
    files = write_debs(
        tmp_path,
        posts=[f"{at(0)}|1|10|a|Ann", f"{at(0)}|2|11|b|Bo", f"{at(0)}|3|12|c|Cy"],
        comments=[f"{at(0, 1)}|4|13|x|Di||3", f"{at(0, 2)}|5|13|y|Di||1"],
    )
    lines = q1(files)
    assert lines[-1] == f"{at(0, 2)},1,Ann,20,1,3,Cy,20,1,2,Bo,10,0"
    assert lines[2] == f"{at(0)},1,Ann,10,0,2,Bo,10,0,3,Cy,10,0"  # all tied: by id


def test_q2_component_versus_clique_and_text_ties(tmp_path):
    # "a text": likers 1-2-3 on a path (component 3, clique 2); "0 text": 4-5 (2 and 2)
    files = write_debs(
        tmp_path,
        comments=[f"{at(0)}|100|9|a text|Zed||1", f"{at(0)}|101|9|0 text|Zed||1"],
        friendships=[f"{at(0)}|1|2", f"{at(0)}|2|3", f"{at(0)}|4|5"],
        likes=[
            f"{at(0, 1)}|4|101",
            f"{at(0, 1.1)}|5|101",
            f"{at(0, 1.2)}|1|100",
            f"{at(0, 1.3)}|2|100",
            f"{at(0, 1.4)}|3|100",
        ],  # fmt: skip
    )
    common = [f"{at(0, 1)},0 text,-", f"{at(0, 1.2)},0 text,a text"]  # 2 > 1, then 2 = 2: by text
    assert q2(files, d=86400, community="component") == [*common, f"{at(0, 1.4)},a text,0 text"]
    assert q2(files, d=86400, community="clique") == common  # the clique stays 2


def test_q2_friendship_after_likes_and_expiry_at_t_plus_d(tmp_path):
    d = 3600
    files = write_debs(
        tmp_path,
        comments=[f"{at(0)}|100|9|first|Zed||1", f"{at(0, 0.5)}|101|9|second|Zed||1"],
        likes=[
            f"{at(0, 0.2)}|1|100",
            f"{at(0, 0.3)}|2|100",
            f"{at(0, 0.6)}|3|101",
            f"{at(0, 1)}|4|100",
            f"{at(0, 1.5)}|5|101",
        ],  # fmt: skip
        friendships=[f"{at(0, 0.4)}|1|2", f"{at(0, 2)}|7|8"],
    )
    assert q2(files, k=2, d=d) == [
        f"{at(0, 0.2)},first,-",
        f"{at(0, 0.6)},first,second",
        f"{at(0, 1)},second,-",  # "first" left at exactly t + d; its like at t + d is ignored
        f"{at(0, 1.5)},-,-",  # so did "second", before the like at the same time
    ]


@pytest.mark.parametrize("instances", [1, 3])
def test_q2_nothing_after_the_end_of_the_input(tmp_path, instances):
    files = write_debs(
        tmp_path, comments=[f"{at(0)}|100|9|only|Zed||1"], likes=[f"{at(0, 0.1)}|1|100"]
    )
    assert q2(files, d=3600, instances=instances) == [f"{at(0, 0.1)},only,-"]
