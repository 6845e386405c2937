"""ApiRoutedPath in template.yaml (the HTTP API route for a path route of
apigw-to-sqs's ROUTES), checked on the template rendered
(scripts/template_render.py) with the parameters empty and set.

Used by scripts/check_routing.py.

* With ApiRoutedPath empty, no route on it; set to `/queues/{name}/messages`,
  the HTTP API has exactly one route more, `POST /queues/{name}/messages`, to
  the messages route's integration with the messages route's authorization,
  under every ApiAuth.
* The template rule RoutedPathNeedsApiRoutes refuses ApiRoutedPath without ApiRoutes (another
  function's Routes parameter does not do), and lets it through with
  ApiRoutes, and the defaults.
* negative tests: each check fails on a copy of the template with the route
  always there, open (`NONE`) or on `ANY`, and with the rule on another
  function's parameter or gone.
"""

import copy
import json

from template_render import Stack, conditions_for, parameters

ROUTED_PATH = "/queues/{name}/messages"
RULE = "RoutedPathNeedsApiRoutes"
API_FUNCTION = "ApigwToSqsFunction"


def run(tpl, check, routes_of):
    """`routes_of`: {function: (its Routes parameter, a document for it)}."""
    p = routed_path_problems(tpl, routes_of)
    check(not p, f"ApiRoutedPath adds POST on it, authorized as the messages route under every ApiAuth, "
                 f"only when set; {RULE} refuses it without ApiRoutes" + (f": {p}" if p else ""))
    routed_path_negative_tests(tpl, check, routes_of)


def api_routes(tpl, overrides):
    """{route key: (target, authorization type, authorizer)} of the HTTP API."""
    stack = Stack(tpl, overrides)
    found = {}
    for r in stack.resources.values():
        if r.get("Type") == "AWS::ApiGatewayV2::Route":
            p = stack.render(r.get("Properties", {}))
            found[p.get("RouteKey")] = (p.get("Target"), p.get("AuthorizationType"), p.get("AuthorizerId"))
    return found


def rule_holds(tpl, name, overrides):
    """Whether template rule `name` lets the parameters through (no rule:
    it does), evaluated as CloudFormation would."""
    rule = tpl.get("Rules", {}).get(name)
    if rule is None:
        return True
    conds = {"applies": rule.get("RuleCondition", True)}
    conds.update({f"assert{i}": a["Assert"] for i, a in enumerate(rule.get("Assertions", []))})
    held = conditions_for({"Conditions": conds}, parameters(tpl, overrides))
    return not held["applies"] or all(v for k, v in held.items() if k != "applies")


def routed_path_problems(tpl, routes_of):
    """POST on ApiRoutedPath, as the messages route is, only when set; and
    only with ApiRoutes."""
    problems = []
    messages = f"POST {tpl['Parameters']['ApiMessagesPath']['Default']}"
    for auth in tpl["Parameters"]["ApiAuth"]["AllowedValues"]:
        without = api_routes(tpl, {"ApiAuth": auth})
        given = api_routes(tpl, {"ApiAuth": auth, "ApiRoutedPath": ROUTED_PATH,
                                 "ApiRoutes": routes_of[API_FUNCTION][1]})
        want = dict(without, **{f"POST {ROUTED_PATH}": without.get(messages)})
        if messages not in without or given != want:
            problems.append(f"ApiAuth={auth}: routes {sorted(without)} with ApiRoutedPath empty; "
                            f"set, {given}, not {want}")
    api = routes_of[API_FUNCTION]
    if not rule_holds(tpl, RULE, {"ApiRoutedPath": ROUTED_PATH, api[0]: api[1]}):
        problems.append(f"{RULE} refuses ApiRoutedPath with ApiRoutes set")
    for fn, (param, doc) in routes_of.items():
        if fn != API_FUNCTION and rule_holds(tpl, RULE, {"ApiRoutedPath": ROUTED_PATH, param: doc}):
            problems.append(f"ApiRoutedPath with only {param} set passes {RULE}")
    if rule_holds(tpl, RULE, {"ApiRoutedPath": ROUTED_PATH}):
        problems.append(f"ApiRoutedPath without ApiRoutes passes {RULE}")
    if not rule_holds(tpl, RULE, {}):
        problems.append(f"{RULE} refuses the defaults")
    return problems


def routed_path_negative_tests(tpl, check, routes_of):
    """The routed route always there or open, the rule on another parameter
    or gone."""
    name = [n for n, r in tpl["Resources"].items() if r.get("Type") == "AWS::ApiGatewayV2::Route"
            and "ApiRoutedPath" in json.dumps(r["Properties"].get("RouteKey"))][0]
    bad = copy.deepcopy(tpl)
    bad["Resources"][name].pop("Condition")
    check(routed_path_problems(bad, routes_of),
          "negative: the routed route without its condition fails the ApiRoutedPath check")
    bad = copy.deepcopy(tpl)
    bad["Resources"][name]["Properties"]["AuthorizationType"] = "NONE"
    check(routed_path_problems(bad, routes_of),
          "negative: the routed route open (NONE) fails the ApiRoutedPath check")
    bad = copy.deepcopy(tpl)
    bad["Resources"][name]["Properties"]["RouteKey"] = {"Fn::Sub": "ANY ${ApiRoutedPath}"}
    check(routed_path_problems(bad, routes_of),
          "negative: ANY in place of POST on the routed path fails the ApiRoutedPath check")
    bad = copy.deepcopy(tpl)
    bad["Rules"][RULE]["Assertions"][0]["Assert"] = {"Fn::Not": [{"Fn::Equals": [{"Ref": "KinesisRoutes"}, ""]}]}
    check(routed_path_problems(bad, routes_of), f"negative: {RULE} on KinesisRoutes fails the ApiRoutedPath check")
    bad = copy.deepcopy(tpl)
    bad["Rules"].pop(RULE)
    check(routed_path_problems(bad, routes_of), f"negative: no {RULE} fails the ApiRoutedPath check")
