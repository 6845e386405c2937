"""template.yaml rendered as CloudFormation would for one set of parameter
values: which conditions hold, which resources exist, what a value becomes.

What only a deployment knows becomes a placeholder: `<Resource>` for a
`Ref`, `<Resource.Attribute>` for a `GetAtt`, `<AWS::Region>` for a pseudo
parameter. Handles Ref, Fn::GetAtt, Fn::If, Fn::Join, Fn::Split, Fn::Select,
Fn::Sub and the condition functions: what template.yaml uses. A
CommaDelimitedList parameter is a list, as CloudFormation makes it (`""` is
`[""]`); a property that renders to `AWS::NoValue` is left out.
"""

import re

NOVALUE = object()


def conditions_for(tpl, params):
    conds = tpl.get("Conditions", {})
    memo = {}

    def ev(node):
        if isinstance(node, dict) and len(node) == 1:
            (k, v), = node.items()
            if k == "Ref":
                return params.get(v, f"<{v}>")
            if k == "Fn::Join":
                return v[0].join(str(p) for p in ev(v[1]))
            if k == "Condition":
                return cond(v)
            if k == "Fn::Equals":
                return str(ev(v[0])) == str(ev(v[1]))
            if k == "Fn::Not":
                return not ev(v[0])
            if k == "Fn::And":
                return all(ev(c) for c in v)
            if k == "Fn::Or":
                return any(ev(c) for c in v)
        return node

    def cond(name):
        if name not in memo:
            memo[name] = bool(ev(conds[name]))
        return memo[name]

    return {name: cond(name) for name in conds}


def parameters(tpl, overrides):
    params = {k: str(v.get("Default", "")) if not isinstance(v.get("Default"), list) else v["Default"]
              for k, v in tpl.get("Parameters", {}).items()}
    params.update(overrides)
    for k, v in tpl.get("Parameters", {}).items():
        if v.get("Type") == "CommaDelimitedList" and isinstance(params[k], str):
            params[k] = params[k].split(",")
    return params


class Stack:
    """The template with one set of parameter values: which resources exist
    and what a value renders to."""

    def __init__(self, tpl, overrides):
        self.tpl = tpl
        self.params = parameters(tpl, overrides)
        self.conds = conditions_for(tpl, self.params)
        self.resources = {n: r for n, r in tpl.get("Resources", {}).items()
                          if r.get("Condition") is None or self.conds.get(r["Condition"], False)}

    def name(self, ref):
        if ref in self.params:
            return str(self.params[ref])
        return f"<{ref}>"

    def render(self, node, local=None):
        local = local or {}
        if isinstance(node, list):
            return [x for x in (self.render(v, local) for v in node) if x is not NOVALUE]
        if not isinstance(node, dict):
            return node
        if len(node) == 1:
            (k, v), = node.items()
            if k == "Ref":
                if isinstance(self.params.get(v), list):
                    return list(self.params[v])
                return NOVALUE if v == "AWS::NoValue" else self.name(v)
            if k == "Fn::GetAtt":
                target = v if isinstance(v, list) else str(v).split(".", 1)
                return f"<{target[0]}.{target[1]}>"
            if k == "Fn::If":
                return self.render(v[1] if self.conds[v[0]] else v[2], local)
            if k == "Fn::Join":
                parts = self.render(v[1], local)
                return v[0].join(str(p) for p in parts)
            if k == "Fn::Split":
                return str(self.render(v[1], local)).split(v[0])
            if k == "Fn::Select":
                items = self.render(v[1], local)
                return items[int(self.render(v[0], local))]
            if k == "Fn::Sub":
                text, subs = (v[0], v[1]) if isinstance(v, list) else (v, {})
                subs = {name: self.render(val, local) for name, val in subs.items()}

                def var(m):
                    name = m.group(1)
                    if name.startswith("!"):
                        return "${" + name[1:] + "}"
                    if name in subs:
                        return str(subs[name])
                    if "." in name:
                        return f"<{name}>"
                    return self.name(name)

                return re.sub(r"\$\{([^}]+)\}", var, text)
        out = {k: self.render(v, local) for k, v in node.items()}
        return {k: v for k, v in out.items() if v is not NOVALUE}
